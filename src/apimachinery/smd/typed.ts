// Walks of a value against its type (typed/tofieldset.go, compare.go, merge.go, remove.go,
// validate.go): the fields a value sets, what changed between two values, the merge of an applied
// configuration into a live object, and the removal of a set of fields. `undefined` = absent.
import { FieldSet } from './fieldSet.js';
import { elementsEqual, elementToString, keyElement, serializeElement, type Path, type PathElement } from './pathElement.js';
import { deduceAtom, fieldType, type Atom, type ListType, type MapType } from './schema.js';
import { pauseAt, runNow, type Walk } from './walk.js';
import { isJsonObject, valueEquals, type Json, type JsonObject } from './value.js';

type V = Json | undefined;

const objectOf = (v: V): JsonObject | undefined => (isJsonObject(v) ? v : undefined);
const listOf = (v: V): Json[] | undefined => (Array.isArray(v) ? v : undefined);
const sameAtom = (a: Atom, b: Atom) => a.map === b.map && a.scalar === b.scalar && a.list === b.list;

/** listItemToPathElement: the key fields (or their defaults) of a map-list item, or a set item's value. */
export function listItemElement(t: ListType, child: Json): PathElement {
  if (!t.associative) throw new Error('invalid indexing of non-associative list');
  if (t.keys.length) {
    if (child === null) throw new Error('associative list with keys may not have a null element');
    if (!isJsonObject(child)) throw new Error('associative list with keys may not have non-map elements');
    const fields: Array<readonly [string, Json]> = [];
    for (const k of t.keys) {
      if (Object.hasOwn(child, k)) fields.push([k, child[k]]);
      else if (t.elementType.defaults?.has(k)) fields.push([k, t.elementType.defaults.get(k) as Json]);
    }
    if (!fields.length) {
      throw new Error(`associative list with keys has an element that omits all key fields ${JSON.stringify(t.keys)} (and doesn't have default values for any key fields)`);
    }
    return keyElement(fields);
  }
  if (isJsonObject(child)) throw new Error("associative list without keys has an element that's a map type");
  if (Array.isArray(child)) throw new Error('not supported: associative list with lists as elements');
  if (child === null) throw new Error("associative list without keys has an element that's an explicit null");
  return { value: child };
}

function tryElement(t: ListType, child: Json): PathElement | undefined {
  try { return listItemElement(t, child); } catch { return undefined; }
}

// ---- ToFieldSet ----

export function toFieldSet(v: Json, atom: Atom): FieldSet {
  return runNow(toFieldSetWalk(v, atom));
}

export function* toFieldSetWalk(v: Json, atom: Atom): Walk<FieldSet> {
  const set = new FieldSet();
  yield* fieldSetOf(v, atom, [], set);
  return set;
}

function* fieldSetOf(v: V, atom: Atom, path: PathElement[], set: FieldSet): Walk<void> {
  const a = deduceAtom(atom, v);
  if (a.map) {
    if (a.map.atomic) { set.insert(path); return; }
    const m = objectOf(v);
    if (!m) return;
    let n = 0;
    for (const key of Object.keys(m)) {
      const val = m[key];
      const p = [...path, { field: key }];
      const t = fieldType(a.map, key);
      if (t) yield* fieldSetOf(val, t, p, set);
      if (val === null || (isJsonObject(val) && Object.keys(val).length === 0) || !a.map.fields.has(key)) set.insert(p);
      if (pauseAt(++n)) yield;
    }
  } else if (a.scalar) {
    set.insert(path);
  } else if (a.list) {
    if (!a.list.associative) { set.insert(path); return; }
    const l = listOf(v);
    if (!l) return;
    const seen = new Set<string>();
    const duplicates = new Set<string>();
    const elements: Array<PathElement | undefined> = [];
    for (let i = 0; i < l.length; i++) {
      const pe = tryElement(a.list, l[i]);
      elements.push(pe);
      if (!pe) continue;
      const k = serializeElement(pe);
      if (seen.has(k) && !duplicates.has(k)) { set.insert([...path, pe]); duplicates.add(k); }
      seen.add(k);
      if (pauseAt(i + 1)) yield;
    }
    for (let i = 0; i < l.length; i++) {
      const pe = elements[i];
      if (!pe || (duplicates.size && duplicates.has(serializeElement(pe)))) continue;
      const p = [...path, pe];
      yield* fieldSetOf(l[i], a.list.elementType, p, set);
      set.insert(p);
      if (pauseAt(i + 1)) yield;
    }
  }
}

// ---- Compare ----

export interface Comparison { added: FieldSet; modified: FieldSet; removed: FieldSet }

export function compare(lhs: Json, rhs: Json, atom: Atom): Comparison {
  return runNow(compareWalk(lhs, rhs, atom));
}

export function* compareWalk(lhs: Json, rhs: Json, atom: Atom): Walk<Comparison> {
  const c = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  yield* compareNode(lhs, rhs, atom, [], c);
  return c;
}

export function isSame(c: Comparison): boolean {
  return c.added.empty() && c.modified.empty() && c.removed.empty();
}

/** A node with this many children is first checked for equality: an unchanged big map or set costs one cheap walk. */
const BIG = 64;

function* compareNode(lhs: V, rhs: V, atom: Atom, path: PathElement[], c: Comparison): Walk<void> {
  const al = deduceAtom(atom, lhs);
  const ar = deduceAtom(atom, rhs);
  let leaf: boolean;
  if (rhs === undefined) leaf = yield* compareAtom(al, lhs, rhs, path, c);
  else if (lhs === undefined || sameAtom(al, ar)) leaf = yield* compareAtom(ar, lhs, rhs, path, c);
  else { yield* compareAtom(al, lhs, rhs, path, c); leaf = yield* compareAtom(ar, lhs, rhs, path, c); }
  if (!leaf) {
    if (lhs === undefined) c.added.insert(path);
    else if (rhs === undefined) c.removed.insert(path);
  }
}

function compareLeaf(lhs: V, rhs: V, path: Path, c: Comparison): true {
  if (lhs === undefined) c.added.insert(path);
  else if (rhs === undefined) c.removed.insert(path);
  else if (!valueEquals(lhs, rhs)) c.modified.insert(path);
  return true;
}

/** Returns whether the node was handled as a leaf (a scalar, or an atomic or empty map or list). */
function* compareAtom(a: Atom, lhs: V, rhs: V, path: PathElement[], c: Comparison): Walk<boolean> {
  if (a.map) {
    const l = objectOf(lhs);
    const r = objectOf(rhs);
    if (a.map.atomic || (isEmptyMap(l) && isEmptyMap(r))) return compareLeaf(lhs, rhs, path, c);
    // Object.keys of a big (dictionary-mode) object is costly: each side's keys are listed once.
    const kl = l ? Object.keys(l) : [];
    const kr = r ? Object.keys(r) : [];
    if (kl.length >= BIG && sameEntries(l!, r!, kl, kr)) return false;
    let n = 0;
    for (const key of zipKeyLists(kl, kr, l)) {
      if (pauseAt(++n)) yield;
      const lv = l?.[key];
      const rv = r?.[key];
      // An unchanged scalar records nothing whatever its type: no path needs building.
      if (lv === rv && (lv === null || typeof lv !== 'object')) continue;
      const t = fieldType(a.map, key);
      if (t) yield* compareNode(lv, rv, t, [...path, { field: key }], c);
    }
    return false;
  }
  if (a.scalar) return compareLeaf(lhs, rhs, path, c);
  if (a.list) {
    const l = listOf(lhs);
    const r = listOf(rhs);
    if (!a.list.associative || (!l?.length && !r?.length)) return compareLeaf(lhs, rhs, path, c);
    if (l && r && l.length >= BIG && valueEquals(l, r)) return false;
    yield* compareListItems(a.list, l ?? [], r ?? [], path, c);
    return false;
  }
  return false;
}

function* compareListItems(t: ListType, lhs: Json[], rhs: Json[], path: PathElement[], c: Comparison): Walk<void> {
  const order: Array<readonly [string, PathElement]> = [];
  const lValues = new Map<string, Json[]>();
  const rValues = new Map<string, Json[]>();
  for (let i = 0; i < lhs.length; i++) {
    if (pauseAt(i + 1)) yield;
    const pe = tryElement(t, lhs[i]);
    if (!pe) continue;
    const k = serializeElement(pe);
    const seen = lValues.get(k);
    if (seen) seen.push(lhs[i]);
    else { lValues.set(k, [lhs[i]]); order.push([k, pe]); }
  }
  for (let i = 0; i < rhs.length; i++) {
    if (pauseAt(i + 1)) yield;
    const pe = tryElement(t, rhs[i]);
    if (!pe) continue;
    const k = serializeElement(pe);
    const seen = rValues.get(k);
    if (seen) seen.push(rhs[i]);
    else { rValues.set(k, [rhs[i]]); if (!lValues.has(k)) order.push([k, pe]); }
  }
  let n = 0;
  for (const [k, pe] of order) {
    if (pauseAt(++n)) yield;
    const l = lValues.get(k) ?? [];
    const r = rValues.get(k) ?? [];
    // Two equal scalars (a set's items) change nothing: no path needs building.
    if (l.length === 1 && r.length === 1 && l[0] === r[0] && typeof l[0] !== 'object') continue;
    const p = [...path, pe];
    if (l.length <= 1 && r.length <= 1) yield* compareNode(l[0], r[0], t.elementType, p, c);
    else if (l.length >= 2 && r.length >= 2) {
      if (l.length !== r.length || l.some((x, i) => !valueEquals(x, r[i]))) c.modified.insert(p);
    } else if (l.length >= 2) {
      if (r.length) yield* compareNode(undefined, r[0], t.elementType, p, c);
      c.removed.insert(p);
    } else {
      if (l.length) yield* compareNode(l[0], undefined, t.elementType, p, c);
      c.added.insert(p);
    }
  }
}

const isEmptyMap = (m: JsonObject | undefined) => !m || Object.keys(m).length === 0;

function zipKeys(l: JsonObject | undefined, r: JsonObject | undefined): string[] {
  return zipKeyLists(l ? Object.keys(l) : [], r ? Object.keys(r) : [], l);
}

/** lhs's keys, then rhs's keys lhs lacks. */
function zipKeyLists(kl: string[], kr: string[], l: JsonObject | undefined): string[] {
  const keys = kl.slice();
  for (const k of kr) if (!l || !Object.hasOwn(l, k)) keys.push(k);
  return keys;
}

function sameEntries(l: JsonObject, r: JsonObject | undefined, kl: string[], kr: string[]): boolean {
  if (!r || kl.length !== kr.length) return false;
  for (const k of kl) if (!Object.hasOwn(r, k) || !valueEquals(l[k], r[k])) return false;
  return true;
}

// ---- Merge (the rule keeps the right-hand side: the applied configuration wins) ----

export class MergeError extends Error {}

export function merge(lhs: Json, rhs: Json, atom: Atom): Json | undefined {
  return runNow(mergeNode(lhs, rhs, atom));
}

export const mergeWalk = (lhs: Json, rhs: Json, atom: Atom): Walk<Json | undefined> => mergeNode(lhs, rhs, atom);

function* mergeNode(lhs: V, rhs: V, atom: Atom): Walk<V> {
  const al = deduceAtom(atom, lhs);
  const ar = deduceAtom(atom, rhs);
  if (rhs === undefined) return yield* mergeAtom(al, lhs, rhs);
  if (lhs === undefined || sameAtom(al, ar)) return yield* mergeAtom(ar, lhs, rhs);
  yield* mergeAtom(al, lhs, rhs); // upstream walks it too (its output is dropped), so its errors surface
  return yield* mergeAtom(ar, lhs, rhs);
}

const keepRhs = (lhs: V, rhs: V): V => (rhs !== undefined ? rhs : lhs);

function* mergeAtom(a: Atom, lhs: V, rhs: V): Walk<V> {
  if (a.map) {
    const l = objectOf(lhs);
    const r = objectOf(rhs);
    if (a.map.atomic || (isEmptyMap(l) && isEmptyMap(r))) return keepRhs(lhs, rhs);
    const out: JsonObject = {};
    let n = 0;
    for (const key of zipKeys(l, r)) {
      const t = fieldType(a.map, key);
      const lv = l && Object.hasOwn(l, key) ? l[key] : undefined;
      const rv = r && Object.hasOwn(r, key) ? r[key] : undefined;
      const v = t ? yield* mergeNode(lv, rv, t) : keepRhs(lv, rv);
      if (v !== undefined) out[key] = v;
      if (pauseAt(++n)) yield;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (a.scalar) return keepRhs(lhs, rhs);
  if (a.list) {
    const l = listOf(lhs);
    const r = listOf(rhs);
    if (!a.list.associative || (!l?.length && !r?.length)) return keepRhs(lhs, rhs);
    const out = yield* mergeListItems(a.list, l ?? [], r ?? []);
    return out.length ? out : undefined;
  }
  return keepRhs(lhs, rhs);
}

interface Indexed { pes: PathElement[]; items: Json[]; observed: Map<string, Json> }

function* indexList(t: ListType, list: Json[], allowDuplicates: boolean): Walk<Indexed> {
  const out: Indexed = { pes: [], items: [], observed: new Map() };
  for (let i = 0; i < list.length; i++) {
    const child = list[i];
    if (pauseAt(i + 1)) yield;
    let pe: PathElement;
    try { pe = listItemElement(t, child); } catch (e) { throw new MergeError(`element ${i}: ${(e as Error).message}`); }
    const k = serializeElement(pe);
    if (out.observed.has(k)) {
      if (!allowDuplicates) throw new MergeError(`duplicate entries for key ${elementToString(pe)}`);
      out.observed.set(k, null);
    } else {
      out.observed.set(k, child);
    }
    out.pes.push(pe);
    out.items.push(child);
  }
  return out;
}

/** visitListItems of merge.go: shared items keep the configuration's order, live-only items stay where they were. */
function* mergeListItems(t: ListType, lhs: Json[], rhs: Json[]): Walk<Json[]> {
  const R = yield* indexList(t, rhs, false);
  const L = yield* indexList(t, lhs, true);
  const out: Json[] = [];
  const shared = R.pes.filter((pe) => L.observed.has(serializeElement(pe)));
  // An index, not shift(): shift is linear on a large array.
  let sharedAt = 0;
  let next: PathElement | undefined = shared[sharedAt++];
  const mergedRhs = new Set<string>();
  const push = (v: V) => { if (v !== undefined) out.push(v); };
  let li = 0;
  let ri = 0;
  let n = 0;
  while (li < L.pes.length || ri < R.pes.length) {
    if (pauseAt(++n)) yield;
    if (li < L.pes.length && ri < R.pes.length) {
      const pe = L.pes[li];
      const k = serializeElement(pe);
      if (elementsEqual(pe, R.pes[ri])) {
        mergedRhs.add(k);
        push(yield* mergeNode(L.observed.get(k), R.observed.get(k), t.elementType));
        li++; ri++;
        next = shared[sharedAt++];
        continue;
      }
      if (R.observed.has(k) && next && !elementsEqual(next, pe)) { li++; continue; }
    }
    if (li < L.pes.length) {
      const k = serializeElement(L.pes[li]);
      if (!R.observed.has(k)) {
        push(yield* mergeNode(L.items[li], undefined, t.elementType));
        li++;
        continue;
      } else if (mergedRhs.has(k)) {
        li++;
      }
    }
    if (ri < R.pes.length) {
      const pe = R.pes[ri];
      const k = serializeElement(pe);
      mergedRhs.add(k);
      push(yield* mergeNode(L.observed.get(k), R.observed.get(k), t.elementType));
      ri++;
      if (next && elementsEqual(next, pe)) next = shared[sharedAt++];
    }
  }
  return out;
}

// ---- RemoveItems (an emptied map or list becomes null, as upstream's walker leaves it) ----

export function removeItems(v: Json, toRemove: FieldSet, atom: Atom): Json {
  return runNow(removeItemsWalk(v, toRemove, atom));
}

export function* removeItemsWalk(v: Json, toRemove: FieldSet, atom: Atom): Walk<Json> {
  const a = deduceAtom(atom, v);
  if (a.map) {
    if (!isJsonObject(v) || Object.keys(v).length === 0 || a.map.atomic) return null;
    const out: JsonObject = {};
    let n = 0;
    for (const key of Object.keys(v)) {
      if (pauseAt(++n)) yield;
      const pe: PathElement = { field: key };
      if (toRemove.has([pe])) continue;
      const sub = toRemove.withPrefix(pe);
      const t = fieldType(a.map, key);
      out[key] = !sub.empty() && t ? yield* removeItemsWalk(v[key], sub, t) : v[key];
    }
    return Object.keys(out).length ? out : null;
  }
  if (a.scalar) return v;
  if (a.list) {
    if (!Array.isArray(v) || v.length === 0 || !a.list.associative) return null;
    const items: Json[] = [];
    for (let i = 0; i < v.length; i++) {
      if (pauseAt(i + 1)) yield;
      const child = v[i];
      const pe = tryElement(a.list, child);
      if (pe && toRemove.has([pe])) continue;
      const sub = pe ? toRemove.withPrefix(pe) : undefined;
      items.push(!sub || sub.empty() ? child : yield* removeItemsWalk(child, sub, a.list.elementType));
    }
    return items.length ? items : null;
  }
  return null;
}

// ---- Validate (what ObjectToTyped checks of an applied configuration) ----

export function validateTyped(v: Json, atom: Atom, allowDuplicates = false): string[] {
  return runNow(validateTypedWalk(v, atom, allowDuplicates));
}

export function* validateTypedWalk(v: Json, atom: Atom, allowDuplicates = false): Walk<string[]> {
  const errs: string[] = [];
  yield* validateNode(v, atom, '', errs, allowDuplicates, 0);
  return errs;
}

function describe(v: Json): string {
  return Array.isArray(v) ? `[]interface {}` : isJsonObject(v) ? 'map[string]interface {}' : typeof v === 'number' ? 'float64' : typeof v === 'boolean' ? 'bool' : typeof v;
}

function* validateNode(v: Json, atom: Atom, path: string, errs: string[], dup: boolean, depth: number): Walk<void> {
  if (depth > 200) { errs.push(`${path}: nested too deeply`); return; }
  const a = deduceAtom(atom, v);
  if (a.map) {
    if (v === null) return;
    if (!isJsonObject(v)) { errs.push(`${path}: expected map, got ${describe(v)}`); return; }
    yield* validateMap(a.map, v, path, errs, dup, depth);
  } else if (a.scalar) {
    if (v === null) return;
    const ok = a.scalar === 'numeric' ? typeof v === 'number' : a.scalar === 'string' ? typeof v === 'string'
      : a.scalar === 'boolean' ? typeof v === 'boolean' : typeof v !== 'object';
    const what = a.scalar === 'numeric' ? 'numeric (int or float)' : a.scalar === 'untyped' ? 'any scalar' : a.scalar;
    if (!ok) errs.push(`${path}: expected ${what}, got ${describe(v)}`);
  } else if (a.list) {
    if (v === null) return;
    if (!Array.isArray(v)) { errs.push(`${path}: expected list, got ${describe(v)}`); return; }
    const seen = new Set<string>();
    for (let i = 0; i < v.length; i++) {
      if (pauseAt(i + 1)) yield;
      let pe: PathElement = { index: i };
      if (a.list.associative) {
        try { pe = listItemElement(a.list, v[i]); } catch (e) { errs.push(`${path}: element ${i}: ${(e as Error).message}`); return; }
        const k = serializeElement(pe);
        if (seen.has(k) && !dup) errs.push(`${path}: duplicate entries for key ${elementToString(pe)}`);
        seen.add(k);
      }
      yield* validateNode(v[i], a.list.elementType, path + elementToString(pe), errs, dup, depth + 1);
    }
  }
}

function* validateMap(m: MapType, v: JsonObject, path: string, errs: string[], dup: boolean, depth: number): Walk<void> {
  let n = 0;
  for (const key of Object.keys(v)) {
    if (pauseAt(++n)) yield;
    const t = fieldType(m, key);
    const p = `${path}.${key}`;
    if (!t) { errs.push(`${p}: field not declared in schema`); return; }
    yield* validateNode(v[key], t, p, errs, dup, depth + 1);
  }
}

/** ValidationErrors.Error(): one error as it is, several under "errors:". */
export function validationMessage(errs: string[]): string {
  const clean = errs.map((e) => (e.startsWith(': ') ? e.slice(2) : e));
  return clean.length === 1 ? clean[0] : ['errors:', ...clean.map((e) => `  ${e}`)].join('\n');
}
