// One oracle step as plain data (printable, shrinkable), and how it becomes HTTP requests against a
// target (a group serving llamas through kube-apiserver). Bodies are built per target, so the only
// thing that differs between the two targets' requests is the group.
import { stringify as toYaml } from 'yaml';
import type { HttpsResult } from '../e2e.helpers.js';

export type Sub = 'main' | 'status';
export const VERSION = 'v1alpha';

export interface SpecFields { weight?: number; height?: number; color?: string; favoriteFood?: string; shorn?: boolean }
export interface OwnerRef { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }

/** What a create or an apply sends (besides apiVersion, kind and name). */
export interface Config {
  spec?: SpecFields;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerRef[];
  status?: { observedGeneration?: number };
}

/** `metadata.managedFields` sent in a request: `[{}]`, a valid replacement, or entries upstream cannot decode. */
export type ManagedFieldsPayload = 'reset' | 'replace' | 'badOperation' | 'badFieldsType';

/** A change as a merge patch (null deletes); a PUT applies the same change to the object it read. */
export interface Change {
  spec?: { [K in keyof SpecFields]?: SpecFields[K] | null };
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  finalizers?: string[] | null;
  ownerReferences?: OwnerRef[] | null;
  status?: { observedGeneration?: number | null } | null;
  managedFields?: ManagedFieldsPayload;
}

/** Query and headers of a non-apply write. `force` is invalid there (422), and the point of having it. */
export interface Writer { fieldManager?: string; userAgent?: string; dryRun?: boolean; force?: boolean }

export type JsonOp =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string };

export type Step =
  | { op: 'create'; config: Config; w: Writer }
  | { op: 'update'; sub: Sub; change: Change; w: Writer; withoutResourceVersion?: boolean }
  | { op: 'merge'; sub: Sub; change: Change; w: Writer }
  | { op: 'json'; sub: Sub; ops: JsonOp[]; w: Writer }
  | {
    op: 'apply'; sub: Sub; config: Config; manager?: string; force?: boolean; dryRun?: boolean; userAgent?: string;
    yaml?: boolean; fieldValidation?: 'Strict' | 'Warn' | 'Ignore'; unknownField?: boolean;
    /** a key written twice in the body text: kind, metadata.name, or the first field of spec (status) */
    repeatedKey?: 'top' | 'metadata' | 'spec';
    /** apply with a body of the wrong type */
    wrongType?: 'kind' | 'version' | 'group';
  }
  | { op: 'delete'; dryRun?: boolean }
  | { op: 'get' };

export interface Target {
  /** e.g. oracle.example.com */
  group: string;
  label: string;
  call(method: string, path: string, opts: { body?: string; headers: Record<string, string> }): Promise<HttpsResult>;
}

export interface Exchange { method: string; path: string; headers: Record<string, string>; body?: string; res: HttpsResult }

const collection = (t: Target, ns: string) => `/apis/${t.group}/${VERSION}/namespaces/${ns}/llamas`;
const itemPath = (t: Target, ns: string, name: string, sub: Sub) => `${collection(t, ns)}/${name}${sub === 'status' ? '/status' : ''}`;

function query(params: Record<string, string | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== false) q.set(k, v === true ? 'true' : v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

const writerQuery = (w: Writer) => query({ fieldManager: w.fieldManager, dryRun: w.dryRun ? 'All' : undefined, force: w.force });
const uaHeader = (ua: string | undefined): Record<string, string> => (ua === undefined ? {} : { 'User-Agent': ua });

export function managedFieldsPayload(p: ManagedFieldsPayload, group: string): unknown[] {
  const entry = { manager: 'importer', operation: 'Update', apiVersion: `${group}/${VERSION}`, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:weight': {} }, 'f:metadata': { 'f:labels': { '.': {} } } } };
  switch (p) {
    case 'reset': return [{}];
    case 'replace': return [entry];
    case 'badOperation': return [{ ...entry, operation: 'Bogus' }];
    case 'badFieldsType': return [{ ...entry, fieldsType: 'FieldsV2' }];
  }
}

/** A full object body for a create or an apply. */
function objectBody(t: Target, name: string, c: Config, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name };
  if (c.labels) metadata.labels = c.labels;
  if (c.annotations) metadata.annotations = c.annotations;
  if (c.finalizers) metadata.finalizers = c.finalizers;
  if (c.ownerReferences) metadata.ownerReferences = c.ownerReferences;
  return {
    apiVersion: `${t.group}/${VERSION}`, kind: 'Llama', metadata,
    ...(c.spec ? { spec: c.spec } : {}), ...(c.status ? { status: c.status } : {}), ...extra,
  };
}

function mergePatchBody(t: Target, c: Change): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (c.labels) metadata.labels = c.labels;
  if (c.annotations) metadata.annotations = c.annotations;
  if (c.finalizers !== undefined) metadata.finalizers = c.finalizers;
  if (c.ownerReferences !== undefined) metadata.ownerReferences = c.ownerReferences;
  if (c.managedFields) metadata.managedFields = managedFieldsPayload(c.managedFields, t.group);
  return {
    ...(Object.keys(metadata).length ? { metadata } : {}),
    ...(c.spec ? { spec: c.spec } : {}), ...(c.status !== undefined ? { status: c.status } : {}),
  };
}

type Json = Record<string, unknown>;
const asMap = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? { ...(v as Json) } : {});

/** RFC 7386 for one level of keys: null deletes. */
function mergeMap(into: unknown, change: Record<string, unknown> | undefined): Json | undefined {
  if (!change) return asMap(into);
  const out = asMap(into);
  for (const [k, v] of Object.entries(change)) if (v === null) delete out[k]; else out[k] = v;
  return out;
}

/** The object a PUT sends: what the GET returned, with the change applied. */
function changedObject(t: Target, live: Json, c: Change, withoutResourceVersion: boolean): Json {
  const obj: Json = structuredClone(live);
  const metadata = asMap(obj.metadata);
  if (c.labels) metadata.labels = mergeMap(metadata.labels, c.labels);
  if (c.annotations) metadata.annotations = mergeMap(metadata.annotations, c.annotations);
  if (c.finalizers !== undefined) { if (c.finalizers === null) delete metadata.finalizers; else metadata.finalizers = c.finalizers; }
  if (c.ownerReferences !== undefined) { if (c.ownerReferences === null) delete metadata.ownerReferences; else metadata.ownerReferences = c.ownerReferences; }
  if (c.managedFields) metadata.managedFields = managedFieldsPayload(c.managedFields, t.group);
  if (withoutResourceVersion) delete metadata.resourceVersion;
  obj.metadata = metadata;
  if (c.spec) obj.spec = mergeMap(obj.spec, c.spec);
  if (c.status === null) delete obj.status;
  else if (c.status) obj.status = mergeMap(obj.status, c.status);
  return obj;
}

/**
 * The body text with one key written a second time (a decoder keeps the last; the value is the same
 * one, so only the finding differs): `spec` repeats the first field of spec or status, falling back to kind.
 */
function withRepeatedKey(text: string, obj: Json, where: 'top' | 'metadata' | 'spec', yaml: boolean): string {
  const top = () => (yaml ? `kind: Llama\n${text}` : `{"kind":"Llama",${text.slice(1)}`);
  if (where === 'top') return top();
  const field = ['spec', 'status'].find((f) => Object.keys(asMap(obj[f])).length);
  const [parent, key] = where === 'metadata' ? ['metadata', 'name'] : field ? [field, Object.keys(asMap(obj[field]))[0]] : [];
  if (!parent || !key) return top();
  const value = asMap(obj[parent])[key];
  const [open, repeated] = yaml
    ? [`\n${parent}:\n`, `\n${parent}:\n  ${key}: ${toYaml(value).trim()}\n`]
    : [`"${parent}":{`, `"${parent}":{${JSON.stringify(key)}:${JSON.stringify(value)},`];
  return text.includes(open) ? text.replace(open, repeated) : top();
}

async function send(t: Target, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Exchange> {
  const res = await t.call(method, path, { body, headers });
  return { method, path, headers, body, res };
}

const JSON_TYPE = { 'Content-Type': 'application/json' };

/** Runs one step against one target; a step may be more than one request (a PUT reads first). */
export async function runStep(step: Step, t: Target, ns: string, name: string): Promise<Exchange[]> {
  switch (step.op) {
    case 'get':
      return [await send(t, 'GET', itemPath(t, ns, name, 'main'), {}), await send(t, 'GET', itemPath(t, ns, name, 'status'), {})];
    case 'create':
      return [await send(t, 'POST', collection(t, ns) + writerQuery(step.w), { ...JSON_TYPE, ...uaHeader(step.w.userAgent) }, JSON.stringify(objectBody(t, name, step.config)))];
    case 'delete':
      return [await send(t, 'DELETE', itemPath(t, ns, name, 'main') + query({ dryRun: step.dryRun ? 'All' : undefined }), {})];
    case 'merge':
      return [await send(t, 'PATCH', itemPath(t, ns, name, step.sub) + writerQuery(step.w),
        { 'Content-Type': 'application/merge-patch+json', ...uaHeader(step.w.userAgent) }, JSON.stringify(mergePatchBody(t, step.change)))];
    case 'json':
      return [await send(t, 'PATCH', itemPath(t, ns, name, step.sub) + writerQuery(step.w),
        { 'Content-Type': 'application/json-patch+json', ...uaHeader(step.w.userAgent) }, JSON.stringify(step.ops))];
    case 'update': {
      const read = await send(t, 'GET', itemPath(t, ns, name, step.sub), {});
      // A missing object: PUT a fresh one (kube does not create on update for either target).
      const live: Json = read.res.status === 200 && read.res.json ? (read.res.json as Json) : objectBody(t, name, { spec: { weight: 10, height: 1 } });
      const body = changedObject(t, live, step.change, step.withoutResourceVersion ?? false);
      return [read, await send(t, 'PUT', itemPath(t, ns, name, step.sub) + writerQuery(step.w), { ...JSON_TYPE, ...uaHeader(step.w.userAgent) }, JSON.stringify(body))];
    }
    case 'apply': {
      const extra: Record<string, unknown> = {};
      if (step.wrongType === 'kind') extra.kind = 'Alpaca';
      if (step.wrongType === 'version') extra.apiVersion = `${t.group}/v2`;
      if (step.wrongType === 'group') extra.apiVersion = 'wrong.example.com/v1alpha';
      const obj = objectBody(t, name, step.config, extra);
      if (step.unknownField) obj.spec = { ...asMap(obj.spec), tail: 'long' };
      const text = step.yaml ? toYaml(obj) : JSON.stringify(obj);
      const body = step.repeatedKey ? withRepeatedKey(text, obj, step.repeatedKey, step.yaml ?? false) : text;
      const q = query({ fieldManager: step.manager, force: step.force, dryRun: step.dryRun ? 'All' : undefined, fieldValidation: step.fieldValidation });
      return [await send(t, 'PATCH', itemPath(t, ns, name, step.sub) + q, { 'Content-Type': 'application/apply-patch+yaml', ...uaHeader(step.userAgent) }, body)];
    }
  }
}

/** One line naming a step, for reports. */
export function describeStep(s: Step): string {
  return JSON.stringify(s);
}
