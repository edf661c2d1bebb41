// Values as structured-merge-diff sees them (sigs.k8s.io/structured-merge-diff value/): plain JSON where
// `undefined` is an absent field and `null` an explicit null; ordering and equality as Go compares them.
import { compareBytes, goQuote } from '../goCompat.js';
import { isJsonObject, jsonEqual, type Json, type JsonObject } from '../jsonValue.js';

export type { Json, JsonObject };
export { isJsonObject };

/** value.Equals: deep equality (numbers compare numerically, map order does not matter). */
export const valueEquals = (a: Json, b: Json): boolean => jsonEqual(a, b);

/** value.Compare: numbers < strings < booleans < lists < maps < null; lists and maps lexically. */
export function valueCompare(a: Json, b: Json): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (typeof a === 'number') return a === b ? 0 : a < (b as number) ? -1 : 1;
  if (typeof a === 'string') return compareBytes(a, b as string);
  if (typeof a === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (Array.isArray(a)) {
    const bl = b as Json[];
    for (let i = 0; ; i++) {
      if (i >= a.length) return i >= bl.length ? 0 : -1;
      if (i >= bl.length) return 1;
      const c = valueCompare(a[i], bl[i]);
      if (c) return c;
    }
  }
  if (a === null) return 0;
  // MapCompare: by sorted keys, then values, then length.
  const ao = a as JsonObject;
  const bo = b as JsonObject;
  const ak = Object.keys(ao).sort(compareBytes);
  const bk = Object.keys(bo).sort(compareBytes);
  for (let i = 0; i < Math.min(ak.length, bk.length); i++) {
    const c = compareBytes(ak[i], bk[i]) || valueCompare(ao[ak[i]], bo[bk[i]]);
    if (c) return c;
  }
  return ak.length === bk.length ? 0 : ak.length < bk.length ? -1 : 1;
}

const rank = (v: Json) => (typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : Array.isArray(v) ? 3 : v === null ? 5 : 4);

/** value.ToString: how a key or set value prints inside a field path (".a[name=\"x\"]"). */
export function valueToString(v: Json): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(valueToString).join(',')}]`;
  return Object.entries(v).map(([k, x]) => `${k}=${valueToString(x)}`).join('');
}
