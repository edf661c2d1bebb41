// Turns a request's list options into an ObjectCache read: namespace prefix, selectors, pagination.
import { objectKey, type Entry, type ObjectCache } from '../storage/cacher/objectCache.js';
import type { ListOptions } from './listOptions.js';
import { parseRV } from './listOptions.js';
import { fieldValue, selectableFields, type ResourceDefinition } from '../registry/resource.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, fieldSelectorSingleValue } from '../apimachinery/selectors.js';
import { errors } from '../apimachinery/status.js';
import type { KubeObject, ListMeta } from '../apimachinery/types.js';

export interface Selection {
  prefix: string;
  /** undefined when nothing narrows the selection beyond the prefix. */
  matches?: (obj: KubeObject) => boolean;
  /** A single object the field selector pins down (metadata.name=X within a namespace). */
  onlyKey?: string;
}

export function selection(def: ResourceDefinition, namespace: string | undefined, opts: ListOptions): Selection {
  const labels = parseLabelSelector(opts.labelSelector);
  const fields = parseFieldSelector(opts.fieldSelector, selectableFields(def));
  const hasLabels = opts.labelSelector.trim() !== '';
  const hasFields = opts.fieldSelector.trim() !== '';
  const prefix = namespace ? `${namespace}/` : '';
  const matches = hasLabels || hasFields
    ? (obj: KubeObject) => (!hasLabels || matchesLabels(labels, obj.metadata.labels)) && (!hasFields || matchesFields(fields, (f) => fieldValue(def, obj, f)))
    : undefined;
  const name = hasFields ? fieldSelectorSingleValue(fields, 'metadata.name') : undefined;
  const onlyKey = name !== undefined && (namespace || !def.namespaced) ? objectKey(namespace, name) : undefined;
  return { prefix, matches, onlyKey };
}

interface ContinueToken { v: string; rv: number; start: string }

export function encodeContinue(rv: number, lastKey: string): string {
  const token: ContinueToken = { v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` };
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decodeContinue(s: string, prefix: string): { rv: number; startAfter: string } {
  let token: ContinueToken;
  try {
    token = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    throw errors.badRequest('continue key is not valid: illegal base64 data or invalid JSON');
  }
  if (token?.v !== 'meta.k8s.io/v1') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (typeof token.rv !== 'number' || token.rv <= 0 || typeof token.start !== 'string') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  const startAfter = token.start.endsWith('\u0000') ? token.start.slice(0, -1) : token.start;
  if (!startAfter.startsWith(prefix) || startAfter.includes('..')) throw errors.badRequest('continue key is not valid: key is outside the requested range');
  return { rv: token.rv, startAfter };
}

const tooOldContinue = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** How long a read waits for a resourceVersion the cache has not reached (the watch cache's 3 s). */
export const FRESHNESS_WAIT_MS = 3000;

/** Waits until the cache has reached `rv`, or answers 504 "Too large resource version" as the watch cache does. */
export async function waitUntilFresh(cache: ObjectCache, rvText: string): Promise<void> {
  const rv = parseRV(rvText);
  if (rv === undefined || rv <= cache.resourceVersion) return;
  // The message quotes the client's digits: past 2^53 the number itself is not exact.
  if (!(await cache.waitUntilFresh(rv, FRESHNESS_WAIT_MS))) throw errors.tooLargeResourceVersion(rvText, cache.resourceVersion);
}

/** A list as of one resourceVersion, paginated like the etcd3 storage: keys in order, continue = last key + rv. */
export async function listEntries(cache: ObjectCache, sel: Selection, opts: ListOptions): Promise<{ items: Entry[]; meta: ListMeta }> {
  let atRV: number | undefined;
  let startAfter: string | undefined;
  if (opts.continue) {
    // The token carries its own resourceVersion (etcd3 store.GetList).
    if (opts.resourceVersion !== '' && opts.resourceVersion !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
    const c = decodeContinue(opts.continue, sel.prefix);
    if (c.rv < cache.oldestRV) throw errors.expired(tooOldContinue);
    atRV = c.rv;
    startAfter = c.startAfter;
  } else {
    const rv = parseRV(opts.resourceVersion);
    await waitUntilFresh(cache, opts.resourceVersion);
    if (opts.resourceVersionMatch === 'Exact' && rv !== undefined) {
      if (rv < cache.oldestRV) throw errors.expired(`too old resource version: ${rv} (${cache.oldestRV})`);
      atRV = rv;
    }
  }
  const listRV = atRV ?? cache.resourceVersion;
  let candidates: Entry[];
  if (sel.onlyKey !== undefined && atRV === undefined) {
    const e = cache.get(sel.onlyKey);
    candidates = e && (startAfter === undefined || e.key > startAfter) ? [e] : [];
  } else {
    candidates = cache.list({ prefix: sel.prefix, atRV, startAfter });
  }
  const limit = opts.limit > 0 ? opts.limit : Infinity;
  const meta: ListMeta = { resourceVersion: String(listRV) };
  // Nothing to filter or cut: the candidates are the list (a fresh array from the cache, not copied again).
  if (!sel.matches && candidates.length <= limit) return { items: candidates, meta };
  const items: Entry[] = [];
  let i = 0;
  for (; i < candidates.length && items.length < limit; i++) {
    if (!sel.matches || sel.matches(candidates[i].object)) items.push(candidates[i]);
  }
  if (items.length === limit && i < candidates.length) {
    const more = sel.matches ? candidates.slice(i).some((e) => sel.matches!(e.object)) : true;
    if (more) {
      meta.continue = encodeContinue(listRV, items[items.length - 1].key);
      // etcd can count what remains only when no selector filters it; upstream omits it otherwise.
      if (!sel.matches) meta.remainingItemCount = candidates.length - i;
    }
  }
  return { items, meta };
}
