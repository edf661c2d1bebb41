// The field manager every write goes through (managedfields/internal/fieldmanager.go and the managers
// NewDefaultFieldManager chains): request managedFields or the live ones, skip-non-applied,
// before-first-apply, cap at 10 update managers, strip server-owned metadata, last-applied for kubectl.
import { goJSON } from '../goCompat.js';
import { Pacer } from '../pacer.js';
import { ApiError } from '../status.js';
import { rfc3339 } from '../meta.js';
import { FieldSet } from '../smd/fieldSet.js';
import { fieldElement, type Path } from '../smd/pathElement.js';
import type { Atom } from '../smd/schema.js';
import { validateTyped, validateTypedWalk, validationMessage } from '../smd/typed.js';
import { Conflicts, Updater, type ManagedFields } from '../smd/updater.js';
import type { Json } from '../smd/value.js';
import type { KubeObject, ManagedFieldsEntry } from '../types.js';
import { conflictError } from './conflict.js';
import { runPaced } from '../smd/walk.js';
import { decodeManagedFieldsWalk, emptyManaged, encodeManagedFieldsWalk, isReset, managerIdentifier, type Managed } from './entries.js';

const MAX_UPDATE_MANAGERS = 10;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

const f = fieldElement;
/** stripmeta.go: never tracked. */
const STRIPPED = FieldSet.of(
  [f('apiVersion')], [f('kind')], [f('metadata')],
  ...['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields', 'resourceVersion']
    .map((n): Path => [f('metadata'), f(n)]),
);

export interface FieldManagerOptions {
  atom: Atom;
  group: string;
  version: string;
  kind: string;
  /** '' for the main resource, 'status' for /status. */
  subresource: string;
  /** Paths the strategy resets for this endpoint (e.g. status on the main resource). */
  resetFields: Path[];
  now: () => Date;
}

export class FieldManager {
  private readonly updater: Updater;
  private readonly apiVersion: string;

  constructor(private readonly o: FieldManagerOptions) {
    this.updater = new Updater(o.atom, FieldSet.of(...o.resetFields));
    this.apiVersion = o.group ? `${o.group}/${o.version}` : o.version;
  }

  /** An empty object of the kind: what a create compares against. */
  emptyObject(): KubeObject {
    return { apiVersion: this.apiVersion, kind: this.o.kind, metadata: {} };
  }

  /**
   * UpdateNoErrors: the managed fields of a create, update or non-apply patch recorded on `next`.
   * `live` is undefined for a create. If anything fails, the live managedFields are kept. The pacer
   * lets others run between the walks of a big object.
   */
  async update(live: KubeObject | undefined, next: KubeObject, manager: string, pace = new Pacer()): Promise<KubeObject> {
    try {
      const managed = await this.liveOrRequest(live, next, pace);
      return await this.updateManaged(live ?? this.emptyObject(), stripManaged(next), managed, manager, live === undefined || !live.metadata.uid, pace);
    } catch {
      return withManaged(next, live?.metadata.managedFields);
    }
  }

  private async liveOrRequest(live: KubeObject | undefined, next: KubeObject, pace: Pacer): Promise<Managed> {
    const decode = (entries: readonly ManagedFieldsEntry[]) => runPaced(decodeManagedFieldsWalk(entries), pace);
    const fromLive = () => decode(live?.metadata.managedFields ?? []).catch(() => emptyManaged());
    if (this.o.subresource) return fromLive();
    const requested = next.metadata.managedFields as unknown;
    if (isReset(requested)) return emptyManaged();
    try {
      const m = await decode((requested ?? []) as ManagedFieldsEntry[]);
      return m.fields.size ? m : fromLive();
    } catch {
      return fromLive();
    }
  }

  private async updateManaged(live: KubeObject, next: KubeObject, managed: Managed, manager: string, creating: boolean, pace: Pacer): Promise<KubeObject> {
    // skipNonApplied: an existing object nobody tracks stays untracked until its first apply.
    if (!managed.fields.size && !creating) return withManaged(next, undefined);
    const m = await this.recordUpdate(live, next, managed, this.identifier(manager, 'Update'), pace);
    return withManaged(next, await runPaced(encodeManagedFieldsWalk(this.capUpdateManagers(m)), pace));
  }

  /** managedFieldsUpdater + stripMeta + the structured merge of an update, as "current-operation" first. */
  private async recordUpdate(live: KubeObject, next: KubeObject, managed: Managed, id: string, pace: Pacer): Promise<Managed> {
    const self = 'current-operation';
    const fields = await this.updater.updateManaged(live as unknown as Json, next as unknown as Json, this.apiVersion, managed.fields, self, pace);
    stripFields(fields, self);
    const times = new Map(managed.times);
    const vs = fields.get(self);
    if (vs) {
      fields.delete(self);
      const previous = fields.get(id);
      fields.set(id, previous ? { ...vs, set: vs.set.union(previous.set) } : vs);
      times.set(id, rfc3339(this.o.now()));
    }
    return { fields, times };
  }

  private identifier(manager: string, operation: 'Apply' | 'Update'): string {
    return managerIdentifier({ manager: manager || 'unknown', operation, apiVersion: this.apiVersion, subresource: this.o.subresource || undefined });
  }

  /** capManagersManager: the oldest update managers past 10 merge into "ancient-changes". */
  private capUpdateManagers(m: Managed): Managed {
    const updaters = [...m.fields.entries()].filter(([, vs]) => !vs.applied).map(([id]) => id);
    if (updaters.length <= MAX_UPDATE_MANAGERS) return m;
    const seconds = (id: string) => { const t = m.times.get(id); return t ? Math.floor(Date.parse(t) / 1000) : 0; };
    updaters.sort((a, b) => seconds(a) - seconds(b) || (a < b ? -1 : a > b ? 1 : 0));
    const firstOfVersion = new Map<string, string>();
    let length = updaters.length;
    for (let i = 0; i < updaters.length && length > MAX_UPDATE_MANAGERS; i++) {
      const id = updaters[i];
      const vs = m.fields.get(id)!;
      const time = m.times.get(id);
      const bucket = managerIdentifier({ manager: 'ancient-changes', operation: 'Update', apiVersion: vs.apiVersion });
      const first = firstOfVersion.get(vs.apiVersion);
      if (first === undefined) { firstOfVersion.set(vs.apiVersion, id); continue; }
      if (!m.fields.has(bucket)) {
        const s = m.fields.get(first)!;
        m.fields.delete(first);
        m.fields.set(bucket, s);
      }
      m.fields.set(bucket, { ...vs, set: vs.set.union(m.fields.get(bucket)!.set) });
      m.fields.delete(id);
      length--;
      m.times.set(bucket, time);
    }
    return m;
  }

  /**
   * Server-side apply of `config` (already decoded from YAML/JSON) onto `live` (the empty object when
   * the apply creates). Returns the object to store, its managedFields set; ApiError on a bad
   * configuration (400) or conflicts (409).
   */
  async apply(live: KubeObject, config: unknown, manager: string, force: boolean, pace = new Pacer()): Promise<KubeObject> {
    const cfg = config as Partial<KubeObject>;
    if (cfg.apiVersion !== this.apiVersion || cfg.kind !== this.o.kind) {
      throw new ApiError(400, 'BadRequest', `invalid object type: ${goGvk(String(cfg?.apiVersion ?? ''), String(cfg?.kind ?? ''))}`);
    }
    let managed: Managed;
    try {
      managed = await runPaced(decodeManagedFieldsWalk(live.metadata.managedFields ?? []), pace);
    } catch (e) {
      throw new ApiError(500, 'InternalError', `failed to decode managed fields: ${(e as Error).message}`);
    }
    await pace.breathe();
    const liveObj = stripManaged(live);
    // skipNonApplied: an object nobody tracks gets a before-first-apply entry for what it has.
    if (!managed.fields.size) {
      managed = this.capUpdateManagers(await this.recordUpdate(this.emptyObject(), liveObj, managed, this.identifier('before-first-apply', 'Update'), pace));
    }
    const id = this.identifier(manager, 'Apply');
    let result: { object?: Json; managers: ManagedFields };
    try {
      result = await this.applyOnce(liveObj, cfg, managed, id, force, pace);
    } catch (e) {
      if (!(e instanceof Conflicts)) throw e;
      // lastAppliedManager: kubectl's conflicts with what its last-applied annotation still matches are allowed.
      if (manager !== 'kubectl') throw conflictError(e.conflicts);
      const allowed = this.allowedByLastApplied(liveObj);
      const left = e.conflicts.filter((c) => !allowed?.has(c.path));
      if (!allowed || left.length) throw conflictError(allowed ? left : e.conflicts);
      await pace.breathe();
      result = await this.applyOnce(liveObj, cfg, managed, id, true, pace);
    }
    await pace.breathe();
    const times = new Map(managed.times);
    let object: KubeObject;
    if (result.object !== undefined) {
      times.set(id, rfc3339(this.o.now()));
      object = result.object as unknown as KubeObject;
    } else {
      object = liveObj;
    }
    const fields = result.managers;
    stripFields(fields, id);
    object = withManaged(object, await runPaced(encodeManagedFieldsWalk({ fields, times }), pace));
    if (manager === 'kubectl' && object.metadata.annotations?.[LAST_APPLIED]) object = withLastApplied(object, cfg);
    return object;
  }

  private async applyOnce(live: KubeObject, cfg: Partial<KubeObject>, managed: Managed, id: string, force: boolean, pace: Pacer) {
    if (cfg.metadata && (cfg.metadata as Record<string, unknown>).managedFields != null) {
      throw new ApiError(400, 'BadRequest', 'metadata.managedFields must be nil');
    }
    const errs = await runPaced(validateTypedWalk(cfg as unknown as Json, this.o.atom), pace);
    if (errs.length) {
      // kube answers this with a 500 (an untyped error); it is the client's configuration that is wrong, so 400.
      const meta = (cfg.metadata ?? {}) as { namespace?: unknown; name?: unknown };
      throw new ApiError(400, 'BadRequest', `failed to create typed patch object (${String(meta.namespace ?? '')}/${String(meta.name ?? '')}; ${goGvk(this.apiVersion, this.o.kind)}): ${validationMessage(errs)}`);
    }
    await pace.breathe();
    return this.updater.apply(live as unknown as Json, cfg as unknown as Json, this.apiVersion, new Map(managed.fields), id, force, pace);
  }

  private allowedByLastApplied(live: KubeObject): FieldSet | undefined {
    const text = live.metadata.annotations?.[LAST_APPLIED];
    if (!text) return undefined;
    let last: unknown;
    try { last = JSON.parse(text); } catch { return undefined; }
    if (!last || typeof last !== 'object' || (last as KubeObject).apiVersion !== this.apiVersion) return undefined;
    if (validateTyped(last as Json, this.o.atom).length) return undefined;
    return this.updater.unchangedSince(last as Json, live as unknown as Json);
  }
}

function goGvk(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  const group = slash >= 0 ? apiVersion.slice(0, slash) : '';
  const version = slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion;
  return `${group}/${version}, Kind=${kind}`;
}

function stripFields(fields: ManagedFields, id: string): void {
  const vs = fields.get(id);
  if (!vs) return;
  const set = vs.set.difference(STRIPPED);
  if (set.empty()) fields.delete(id);
  else fields.set(id, { ...vs, set });
}

const stripManaged = (obj: KubeObject): KubeObject => withManaged(obj, undefined);

/** The object with these managedFields (undefined: none). */
export function withManaged(obj: KubeObject, entries: ManagedFieldsEntry[] | undefined): KubeObject {
  if (!entries && obj.metadata.managedFields === undefined) return obj;
  const { managedFields: _m, ...metadata } = obj.metadata;
  return { ...obj, metadata: entries ? { ...metadata, managedFields: entries } : metadata };
}

/** lastAppliedUpdater: kubectl's annotation follows what it applies server-side (without the annotation itself). */
function withLastApplied(obj: KubeObject, cfg: Partial<KubeObject>): KubeObject {
  const meta = { ...(cfg.metadata ?? {}) } as Record<string, unknown>;
  if (meta.annotations && typeof meta.annotations === 'object') {
    const annotations = { ...(meta.annotations as Record<string, string>) };
    delete annotations[LAST_APPLIED];
    meta.annotations = annotations;
  }
  // runtime.Encode of unstructured: Go's json.Marshal (keys sorted) plus the encoder's newline.
  const value = `${goJSON({ ...cfg, metadata: meta })}\n`;
  return { ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations, [LAST_APPLIED]: value } } };
}
