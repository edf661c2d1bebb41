// Values every backend stores the same way: entries, keys, the size bound and "nothing changed".
import { isDeepStrictEqual } from 'node:util';
import { metadataInStructOrder } from '../apimachinery/structOrder.js';
import type { KubeObject } from '../apimachinery/types.js';
import { storageErrors } from './errors.js';
import type { Entry, Preconditions } from './interfaces.js';

/** The largest object stored, in bytes of JSON: what the largest request body (3 MiB) can carry. */
export const MAX_OBJECT_BYTES = 3 * 1024 * 1024;

export function makeEntry(key: string, object: KubeObject, rv: number): Entry {
  return { key, object, json: JSON.stringify(object), rv };
}

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The object as stored at `rv` (0 = not stored yet: no resourceVersion at all). */
export function stamped(key: string, obj: KubeObject, rv: number): Entry {
  const metadata: KubeObject['metadata'] = { ...obj.metadata, resourceVersion: String(rv) };
  if (rv === 0) delete metadata.resourceVersion;
  return makeEntry(key, { ...obj, metadata: metadataInStructOrder(metadata) }, rv);
}

/**
 * etcd refuses large values too; here the bound keeps patches from growing an object without end.
 * Only growth past the bound is refused: an object pushed over it by its deletionTimestamp must
 * still be able to lose its finalizers.
 */
export function checkSize(entry: Entry, prev: Entry | undefined, allowGrowth = false): void {
  checkJsonSize(entry.json.length, () => Buffer.byteLength(entry.json), prev, allowGrowth);
}

/**
 * checkSize for JSON known by its length (UTF-16 units) and byte count, e.g. a backend's stored value
 * plus the resourceVersion field it leaves out: nothing is serialized again to measure it.
 */
export function checkJsonSize(length: number, byteLength: () => number, prev: Entry | undefined, allowGrowth = false): void {
  const grows = !prev || length > prev.json.length;
  if (allowGrowth || !grows || length <= MAX_OBJECT_BYTES / 3) return;
  const bytes = byteLength();
  if (bytes > MAX_OBJECT_BYTES) {
    throw storageErrors.tooLarge(`Request entity too large: the object would be ${bytes} bytes of JSON, the limit is ${MAX_OBJECT_BYTES}`);
  }
}

/**
 * Equal as stored JSON, ignoring key order and the resourceVersion an update carries. Most updates
 * change a metadata scalar (generation, deletionTimestamp): seen without serializing anything; else
 * `next` is serialized with the current resourceVersion and compared with the stored JSON.
 */
export function sameObject(next: KubeObject, current: Entry): boolean {
  if (metadataScalarsDiffer(next.metadata, current.object.metadata)) return false;
  const rv = current.object.metadata.resourceVersion;
  const jn = JSON.stringify({ ...next, metadata: metadataInStructOrder({ ...next.metadata, resourceVersion: rv }) });
  if (jn === current.json) return true;
  // Key order does not change the length: a different length is a different object, without parsing.
  if (jn.length !== current.json.length) return false;
  return isDeepStrictEqual(JSON.parse(jn), JSON.parse(current.json));
}

/** A scalar metadata field (not resourceVersion) present or valued differently: the JSON differs. */
function metadataScalarsDiffer(a: KubeObject['metadata'], b: KubeObject['metadata']): boolean {
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const differs = (k: string) => {
    if (k === 'resourceVersion') return false;
    const [va, vb] = [ra[k], rb[k]];
    const scalar = (v: unknown) => v === null || typeof v !== 'object';
    return (scalar(va) || scalar(vb)) && va !== vb;
  };
  for (const k in ra) if (differs(k)) return true;
  for (const k in rb) if (!(k in ra) && differs(k)) return true;
  return false;
}

/** storage.Preconditions.Check, worded as upstream's. */
export function checkPreconditions(key: string, current: Entry, p: Preconditions): void {
  const meta = current.object.metadata;
  if (p.uid && p.uid !== meta.uid) {
    throw storageErrors.invalidObj(key, `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${meta.uid ?? ''}`);
  }
  if (p.resourceVersion && p.resourceVersion !== meta.resourceVersion) {
    throw storageErrors.invalidObj(key, `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${meta.resourceVersion ?? ''}`);
  }
}
