// One step of a field path (fieldpath/element.go): a struct field or map key, the key fields of an item
// of an associative list, the value of a set item, or a list index; with the fieldsV1 key syntax.
import { compareBytes, goJSON } from '../goCompat.js';
import { valueCompare, valueEquals, valueToString, type Json } from './value.js';

export type PathElement =
  | { readonly field: string }
  | { readonly key: ReadonlyArray<readonly [string, Json]> }
  | { readonly value: Json }
  | { readonly index: number };

export type Path = readonly PathElement[];

export const fieldElement = (field: string): PathElement => ({ field });

/** Key fields sorted by name, as FieldList.Sort leaves them. */
export function keyElement(fields: Array<readonly [string, Json]>): PathElement {
  return { key: [...fields].sort((a, b) => compareBytes(a[0], b[0])) };
}

function order(pe: PathElement): number {
  return 'field' in pe ? 0 : 'key' in pe ? 1 : 'value' in pe ? 2 : 3;
}

export function compareElements(a: PathElement, b: PathElement): number {
  const oa = order(a);
  const ob = order(b);
  if (oa !== ob) return oa < ob ? -1 : 1;
  if ('field' in a) return compareBytes(a.field, (b as { field: string }).field);
  if ('key' in a) {
    const bk = (b as { key: ReadonlyArray<readonly [string, Json]> }).key;
    for (let i = 0; ; i++) {
      if (i >= a.key.length) return i >= bk.length ? 0 : -1;
      if (i >= bk.length) return 1;
      const c = compareBytes(a.key[i][0], bk[i][0]) || valueCompare(a.key[i][1], bk[i][1]);
      if (c) return c;
    }
  }
  if ('value' in a) return valueCompare(a.value, (b as { value: Json }).value);
  const bi = (b as { index: number }).index;
  return a.index === bi ? 0 : a.index < bi ? -1 : 1;
}

export function elementsEqual(a: PathElement, b: PathElement): boolean {
  if ('value' in a && 'value' in b) return valueEquals(a.value, b.value);
  return compareElements(a, b) === 0;
}

/** The fieldsV1 key: f:<name>, k:<json of sorted key fields>, v:<json>, i:<index>. Also the identity of the element. */
export function serializeElement(pe: PathElement): string {
  if ('field' in pe) return `f:${pe.field}`;
  if ('key' in pe) return `k:{${pe.key.map(([k, v]) => `${scalarJSON(k)}:${scalarJSON(v)}`).join(',')}}`;
  if ('value' in pe) return `v:${scalarJSON(pe.value)}`;
  return `i:${pe.index}`;
}

/** goJSON, without its generic walk for the scalars keys and set items almost always are (a hot path). */
function scalarJSON(v: Json): string {
  if (typeof v === 'string') {
    const s = JSON.stringify(v);
    return HTML_OR_SEPARATOR.test(s) ? goJSON(v) : s;
  }
  return typeof v === 'number' || typeof v === 'boolean' ? JSON.stringify(v) : goJSON(v);
}

const HTML_OR_SEPARATOR = /[<>&\u2028\u2029]/;

/** DeserializePathElement; throws on a malformed key, returns undefined for an unknown type. */
export function deserializeElement(s: string): PathElement | undefined {
  if (s.length < 2) throw new Error('key must be 2 characters long:');
  if (s[1] !== ':') throw new Error(`missing colon: ${s}`);
  const rest = s.slice(2);
  switch (s[0]) {
    case 'f': return { field: rest };
    case 'v': return { value: JSON.parse(rest) as Json };
    case 'k': {
      const o = JSON.parse(rest) as unknown;
      if (!o || typeof o !== 'object' || Array.isArray(o)) throw new Error(`ReadObjectCB: expect { or n, but found ${rest[0] ?? ''}`);
      return keyElement(Object.entries(o as Record<string, Json>));
    }
    case 'i': {
      if (!/^[+-]?\d+$/.test(rest)) throw new Error(`strconv.Atoi: parsing "${rest}": invalid syntax`);
      return { index: Number(rest) };
    }
    default: return undefined;
  }
}

/** PathElement.String / Path.String: ".spec.color", "[uid=\"x\"]", "[=\"finalizer\"]", "[3]". */
export function elementToString(pe: PathElement): string {
  if ('field' in pe) return `.${pe.field}`;
  if ('key' in pe) return `[${pe.key.map(([k, v]) => `${k}=${valueToString(v)}`).join(',')}]`;
  if ('value' in pe) return `[=${valueToString(pe.value)}]`;
  return `[${pe.index}]`;
}

export const pathToString = (p: Path): string => p.map(elementToString).join('');

