// The in-memory store: a store-wide resourceVersion counter over an ObjectCache, with the write
// semantics of k8s.io/apiserver's generic registry (preconditions, finalizers, dry run).
import { isDeepStrictEqual } from 'node:util';
import type { DeleteOptions, Mutation, Provider, WriteContext } from '../registry/resource.js';
import { errors, type GroupResource } from '../apimachinery/status.js';
import type { KubeObject, ObjectMeta } from '../apimachinery/types.js';
import { rfc3339 } from '../apimachinery/meta.js';
import { makeEntry, objectKey, ObjectCache, type Entry } from './cacher/objectCache.js';

/** The largest object stored, in bytes of JSON: what the largest request body (3 MiB) can carry. */
export const MAX_OBJECT_BYTES = 3 * 1024 * 1024;

/** Re-runs of an update whose object kept changing under it before giving up with 409. */
const maxUpdateAttempts = 10;

export interface MemoryStoreOptions {
  groupResource: GroupResource;
  historyLimit: number;
  /** Foreground/Orphan finalizers only make sense when a garbage collector will remove them. */
  garbageCollection: boolean;
  now?: () => Date;
  /** Where this process's resourceVersions start; defaults to one no earlier process can have reached. */
  initialRV?: number;
}

/**
 * Microseconds since the epoch: resourceVersions of a new process start above any an earlier one could
 * have issued (it would need a million writes a second), so a client resuming from an old process's RV
 * gets 410 Expired and relists instead of being accepted with a stale view. Stays below 2^53 until 2255.
 */
export function startingResourceVersion(now = Date.now()): number {
  return now * 1000;
}

export class MemoryStore implements Provider {
  readonly cache: ObjectCache;
  private readonly gr: GroupResource;
  private readonly gc: boolean;
  private readonly now: () => Date;

  constructor(opts: MemoryStoreOptions) {
    this.cache = new ObjectCache(opts.historyLimit, opts.initialRV ?? startingResourceVersion());
    this.gr = opts.groupResource;
    this.gc = opts.garbageCollection;
    this.now = opts.now ?? (() => new Date());
  }

  async create(obj: KubeObject, ctx: WriteContext): Promise<Entry> {
    const name = obj.metadata.name!;
    const key = objectKey(obj.metadata.namespace, name);
    if (this.cache.get(key)) throw errors.alreadyExists(this.gr, name);
    return this.commit('ADDED', key, obj, undefined, ctx);
  }

  async update(namespace: string | undefined, name: string, mutate: Mutation, ctx: WriteContext) {
    const key = objectKey(namespace, name);
    // The mutation may yield to the event loop (large objects): if the object changed meanwhile, run
    // it again on the new state, as GuaranteedUpdate does when etcd's revision moved.
    for (let attempt = 1; ; attempt++) {
      const current = this.cache.get(key);
      const next = await mutate(current?.object);
      if (this.cache.get(key) === current) return this.store(key, name, current, next, ctx);
      if (attempt >= maxUpdateAttempts) {
        throw errors.conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
      }
    }
  }

  private store(key: string, name: string, current: Entry | undefined, next: KubeObject, ctx: WriteContext) {
    if (!current) return { entry: this.commit('ADDED', key, next, undefined, ctx), created: true };
    const rv = next.metadata.resourceVersion;
    if (rv && rv !== String(current.rv)) {
      throw errors.conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    // Removing the last finalizer of an object being deleted completes the deletion; like
    // upstream's deleteWithoutFinalizers, what is deleted (and reported) is the last stored state.
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      return { entry: this.commit('DELETED', key, current.object, current, ctx), created: false };
    }
    // etcd3 GuaranteedUpdate: an update that changes nothing is not written (same resourceVersion, no event).
    if (sameObject(next, current.object)) return { entry: current, created: false };
    return { entry: this.commit('MODIFIED', key, next, current, ctx), created: false };
  }

  async delete(namespace: string | undefined, name: string, opts: DeleteOptions, ctx: WriteContext) {
    const key = objectKey(namespace, name);
    const current = this.cache.get(key);
    if (!current) throw errors.notFound(this.gr, name);
    const meta = current.object.metadata;
    const pre = opts.preconditions;
    // rest.BeforeDelete checks preconditions first, naming the Kind (not the resource) in the Conflict.
    const gk = { group: this.gr.group, resource: current.object.kind };
    if (pre?.uid && pre.uid !== meta.uid) {
      throw errors.conflict(gk, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${meta.uid ?? ''}). The object might have been deleted and then recreated`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== meta.resourceVersion) {
      throw errors.conflict(gk, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion ?? ''}). The object might have been modified`);
    }
    const finalizers = this.finalizersAfterDelete(meta.finalizers ?? [], opts);
    if (finalizers.length === 0) {
      return { entry: this.commit('DELETED', key, current.object, current, ctx), deleted: true };
    }
    if (meta.deletionTimestamp && sameSet(finalizers, meta.finalizers ?? [])) {
      return { entry: current, deleted: false }; // already being deleted: nothing changes
    }
    const next: KubeObject = {
      ...current.object,
      metadata: {
        ...meta,
        finalizers,
        // markAsDeleting: the first deletionTimestamp bumps a set generation.
        ...(!meta.deletionTimestamp && meta.generation ? { generation: meta.generation + 1 } : {}),
        deletionTimestamp: meta.deletionTimestamp ?? rfc3339(this.now()),
        deletionGracePeriodSeconds: meta.deletionGracePeriodSeconds ?? 0,
      },
    };
    // Marking for deletion must work for any stored object, however close to the size bound it is.
    return { entry: this.commit('MODIFIED', key, next, current, ctx, { deleting: true }), deleted: false };
  }

  /** Upstream adds "orphan"/"foregroundDeletion" for the garbage collector to act on. */
  private finalizersAfterDelete(existing: string[], opts: DeleteOptions): string[] {
    if (!this.gc) return existing;
    const orphan = opts.propagationPolicy === 'Orphan' || (opts.propagationPolicy === undefined && opts.orphanDependents === true);
    const gcFinalizer = orphan ? 'orphan' : opts.propagationPolicy === 'Foreground' ? 'foregroundDeletion' : undefined;
    const kept = existing.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion');
    if (!gcFinalizer) return opts.propagationPolicy ? kept : existing;
    return [...kept, gcFinalizer];
  }

  /** Stamps the next resourceVersion and records the change, unless this is a dry run. */
  private commit(type: 'ADDED' | 'MODIFIED' | 'DELETED', key: string, obj: KubeObject, prev: Entry | undefined, ctx: WriteContext, opts: { deleting?: boolean } = {}): Entry {
    // A dry-run create has no resourceVersion yet; a dry-run update keeps the current one.
    const rv = ctx.dryRun ? (prev?.rv ?? 0) : this.cache.resourceVersion + 1;
    const metadata: ObjectMeta = { ...obj.metadata, resourceVersion: String(rv) };
    if (rv === 0) delete metadata.resourceVersion;
    const stamped: KubeObject = { ...obj, metadata };
    const entry = makeEntry(key, stamped, rv);
    // etcd refuses large values too; here the bound keeps patches from growing an object without end.
    // Only growth past the bound is refused: an object pushed over it by its deletionTimestamp must
    // still be able to lose its finalizers.
    const grows = !prev || entry.json.length > prev.json.length;
    if (type !== 'DELETED' && !opts.deleting && grows && entry.json.length > MAX_OBJECT_BYTES / 3 && Buffer.byteLength(entry.json) > MAX_OBJECT_BYTES) {
      throw errors.tooLarge(`Request entity too large: the object would be ${Buffer.byteLength(entry.json)} bytes of JSON, the limit is ${MAX_OBJECT_BYTES}`);
    }
    if (!ctx.dryRun) this.cache.apply({ type, rv, entry, prev });
    return entry;
  }
}

/** Equal as stored JSON, ignoring key order and the resourceVersion an update carries. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  const json = (o: KubeObject) => JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
  const [ja, jb] = [json(a), json(b)];
  if (ja === jb) return true;
  // Key order does not change the length: a different length is a different object, without parsing.
  if (ja.length !== jb.length) return false;
  return isDeepStrictEqual(JSON.parse(ja), JSON.parse(jb));
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const inB = new Set(b);
  return a.every((x) => inB.has(x));
}
