// ObjectMeta as Go's typed servers write it: fields in struct order (kube's built-in types and
// sample-apiserver answer so; our validation and the field manager build metadata in different
// orders depending on the write). One order for every stored object keeps its JSON the same
// whichever write produced it.
import type { ObjectMeta } from './types.js';

const META = ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
  'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields'];
const OWNER_REFERENCE = ['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'];
const MANAGED_FIELDS_ENTRY = ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource'];

/** The object's own keys: the listed ones first, in that order, then any other in its own order. */
function ordered<T extends object>(o: T, order: readonly string[]): T {
  const src = o as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of order) if (Object.hasOwn(src, k)) out[k] = src[k];
  for (const k of Object.keys(src)) if (!Object.hasOwn(out, k)) out[k] = src[k];
  return out as T;
}

const orderedItems = (v: unknown, order: readonly string[]): unknown =>
  Array.isArray(v) ? v.map((x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? ordered(x, order) : x)) : v;

export function metadataInStructOrder(m: ObjectMeta): ObjectMeta {
  const out = ordered(m, META) as Record<string, unknown>;
  if (out.ownerReferences) out.ownerReferences = orderedItems(out.ownerReferences, OWNER_REFERENCE);
  if (out.managedFields) out.managedFields = orderedItems(out.managedFields, MANAGED_FIELDS_ENTRY);
  return out as ObjectMeta;
}
