// metadata.managedFields <-> the managers' field sets (managedfields/internal/managedfields.go):
// identifiers, decoding with upstream's checks, encoding in upstream's order.
import { compareBytes, goJSON } from '../goCompat.js';
import { FieldSet } from '../smd/fieldSet.js';
import type { ManagedFields } from '../smd/updater.js';
import { runNow, type Walk } from '../smd/walk.js';
import type { ManagedFieldsEntry } from '../types.js';

export interface Managed { fields: ManagedFields; times: Map<string, string | undefined> }

export const emptyManaged = (): Managed => ({ fields: new Map(), times: new Map() });

/**
 * BuildManagerIdentifier: the entry as JSON without fieldsType, fieldsV1 and time (and without apiVersion
 * for Apply), in ManagedFieldsEntry's field order, so one Apply entry exists per manager and subresource.
 */
export function managerIdentifier(e: Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  const o: Record<string, string> = {};
  if (e.manager) o.manager = e.manager;
  if (e.operation) o.operation = e.operation;
  if (e.apiVersion && e.operation !== 'Apply') o.apiVersion = e.apiVersion;
  if (e.subresource) o.subresource = e.subresource;
  return `{${Object.entries(o).map(([k, v]) => `"${k}":${goJSON(v)}`).join(',')}}`;
}

export function parseIdentifier(id: string): Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'> {
  return JSON.parse(id) as ManagedFieldsEntry;
}

/** DecodeManagedFields; throws with upstream's message on an invalid entry. */
export function decodeManagedFields(entries: readonly ManagedFieldsEntry[]): Managed {
  return runNow(decodeManagedFieldsWalk(entries));
}

export function* decodeManagedFieldsWalk(entries: readonly ManagedFieldsEntry[]): Walk<Managed> {
  const m = emptyManaged();
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.operation !== 'Apply' && e.operation !== 'Update') throw new Error('operation must be `Apply` or `Update`');
    if (!e.apiVersion) throw new Error('apiVersion must not be empty');
    if (e.fieldsType === undefined || e.fieldsType === '') throw new Error(`missing fieldsType in managed fields entry ${i}`);
    if (e.fieldsType !== 'FieldsV1') throw new Error(`invalid fieldsType "${e.fieldsType}" in managed fields entry ${i}`);
    const id = managerIdentifier(e);
    m.fields.set(id, { set: yield* FieldSet.fromFieldsV1Walk(e.fieldsV1 ?? {}), apiVersion: e.apiVersion, applied: e.operation === 'Apply' });
    m.times.set(id, e.time);
  }
  return m;
}

/** encodeManagedFields: undefined when nobody manages anything; sorted by operation, time, manager, apiVersion, subresource. */
export function encodeManagedFields(m: Managed): ManagedFieldsEntry[] | undefined {
  return runNow(encodeManagedFieldsWalk(m));
}

export function* encodeManagedFieldsWalk(m: Managed): Walk<ManagedFieldsEntry[] | undefined> {
  if (!m.fields.size) return undefined;
  const out: ManagedFieldsEntry[] = [];
  for (const [id, vs] of m.fields) {
    const ident = parseIdentifier(id);
    const e: ManagedFieldsEntry = {};
    if (ident.manager) e.manager = ident.manager;
    e.operation = vs.applied ? 'Apply' : (ident.operation ?? 'Update');
    e.apiVersion = vs.apiVersion;
    const time = m.times.get(id);
    if (time) e.time = time;
    e.fieldsType = 'FieldsV1';
    e.fieldsV1 = yield* vs.set.toFieldsV1Walk();
    if (ident.subresource) e.subresource = ident.subresource;
    out.push(e);
  }
  const seconds = (t: string | undefined) => (t ? Math.floor(Date.parse(t) / 1000) : 0);
  return out.sort((p, q) => compareBytes(p.operation!, q.operation!)
    || seconds(p.time) - seconds(q.time)
    || compareBytes(p.manager ?? '', q.manager ?? '')
    || compareBytes(p.apiVersion ?? '', q.apiVersion ?? '')
    || compareBytes(p.subresource ?? '', q.subresource ?? ''));
}

/** isResetManagedFields: `[]` or `[{}]` in a request clears the tracking. */
export function isReset(entries: unknown): boolean {
  if (!Array.isArray(entries)) return false;
  if (entries.length === 0) return true;
  return entries.length === 1 && isEmptyEntry(entries[0]);
}

function isEmptyEntry(e: unknown): boolean {
  if (!e || typeof e !== 'object' || Array.isArray(e)) return false;
  const o = e as Record<string, unknown>;
  return Object.entries(o).every(([, v]) => v === undefined || v === '' || v === null);
}
