// A set of field paths as a trie (fieldpath/set.go): the members of a node are the path elements that
// are themselves in the set; its children hold the deeper members. Nodes are keyed by the element's
// fieldsV1 key, which identifies it; order is only imposed when printed or iterated.
// A FieldSet is a value: built by insert (or decoded), then never changed. So results share unchanged
// subtrees with their operands, and a set's fieldsV1 is computed once: an update that leaves a big map
// or set alone costs what it changed, not what the object holds.
import { compareElements, deserializeElement, serializeElement, type Path, type PathElement } from './pathElement.js';
import { pauseAt, runNow, sortWalk, type Walk } from './walk.js';

interface Child { pe: PathElement; set: FieldSet }

export class FieldSet {
  readonly members = new Map<string, PathElement>();
  readonly children = new Map<string, Child>();
  /** Its fieldsV1, and the same with the "." self marker (as a member's children are written). */
  private v1?: Record<string, unknown>;
  private v1Member?: Record<string, unknown>;

  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  /** Parents are not added; the empty path (the whole object) is never tracked. */
  insert(p: Path): void {
    if (p.length === 0) return;
    let s: FieldSet = this;
    for (let i = 0; i < p.length - 1; i++) s = s.descend(p[i]);
    const last = p[p.length - 1];
    s.members.set(serializeElement(last), last);
  }

  descend(pe: PathElement): FieldSet {
    const k = serializeElement(pe);
    let c = this.children.get(k);
    if (!c) this.children.set(k, (c = { pe, set: new FieldSet() }));
    return c.set;
  }

  has(p: Path): boolean {
    let s: FieldSet | undefined = this;
    for (let i = 0; i < p.length - 1 && s; i++) s = s.children.get(serializeElement(p[i]))?.set;
    return !!s && p.length > 0 && s.members.has(serializeElement(p[p.length - 1]));
  }

  empty(): boolean {
    if (this.members.size) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** The subset under one element, without the prefix. */
  withPrefix(pe: PathElement): FieldSet {
    return this.children.get(serializeElement(pe))?.set ?? new FieldSet();
  }

  /** Nothing directly here: cheaper than empty(), which looks below. */
  private bare(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  union(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    if (this.bare()) return o;
    const out = new FieldSet();
    for (const [k, pe] of this.members) out.members.set(k, pe);
    for (const [k, pe] of o.members) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      out.children.set(k, { pe: c.pe, set: oc ? c.set.union(oc.set) : c.set });
    }
    for (const [k, c] of o.children) if (!this.children.has(k)) out.children.set(k, c);
    return out;
  }

  intersection(o: FieldSet): FieldSet {
    const out = new FieldSet();
    if (this.bare() || o.bare()) return out;
    const [small, big] = this.members.size <= o.members.size ? [this, o] : [o, this];
    for (const [k, pe] of small.members) if (big.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      if (!oc) continue;
      const i = c.set.intersection(oc.set);
      if (!i.empty()) out.children.set(k, { pe: c.pe, set: i });
    }
    return out;
  }

  /** Members of o leave; a member of o does not remove this set's paths below it (parent − child = parent). */
  difference(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      const d = oc ? c.set.difference(oc.set) : c.set;
      if (!d.empty()) out.children.set(k, { pe: c.pe, set: d });
    }
    return out;
  }

  /** Like difference, but a member of o also removes everything below it. */
  recursiveDifference(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      if (o.members.has(k)) continue;
      const oc = o.children.get(k);
      const d = oc ? c.set.recursiveDifference(oc.set) : c.set;
      if (!d.empty()) out.children.set(k, { pe: c.pe, set: d });
    }
    return out;
  }

  /** Every path in order: a node's members (sorted), then its children's paths (preorder, as Iterate). */
  paths(prefix: PathElement[] = [], out: Path[] = []): Path[] {
    for (const pe of sortedElements([...this.members.values()])) out.push([...prefix, pe]);
    for (const c of sortedChildren(this.children)) c.set.paths([...prefix, c.pe], out);
    return out;
  }

  equals(o: FieldSet): boolean {
    return this.difference(o).empty() && o.difference(this).empty();
  }

  /** The fieldsV1 trie (serialize.go emitContentsV1): keys in element order, "." marks a member with children. */
  toFieldsV1(): Record<string, unknown> {
    return runNow(this.toFieldsV1Walk());
  }

  /** A whole entry's fieldsV1; a big one is remembered, so that decoding it again gives this set back. */
  *toFieldsV1Walk(): Walk<Record<string, unknown>> {
    const v1 = yield* this.contentsV1();
    if (this.weight() >= REMEMBERED_WEIGHT) decoded.set(v1, this);
    return v1;
  }

  /** How many elements its nodes list (members and children): cheap, as big nodes are few. */
  weight(): number {
    let n = this.members.size + this.children.size;
    for (const c of this.children.values()) n += c.set.weight();
    return n;
  }

  /** The fieldsV1 of this node, computed once. */
  *contentsV1(): Walk<Record<string, unknown>> {
    return (this.v1 ??= yield* emit(this));
  }

  /** The fieldsV1 below a member with children: "." marks the member itself. */
  *memberFieldsV1(): Walk<Record<string, unknown>> {
    if (!this.members.size && !this.children.size) return yield* this.contentsV1();
    if (!this.v1Member) {
      const own = yield* this.contentsV1();
      // Cached only once whole: a paced walk of another request may share this set meanwhile.
      const out: Record<string, unknown> = { '.': {} };
      let n = 0;
      for (const k in own) {
        out[k] = own[k];
        if (pauseAt(++n)) yield;
      }
      this.v1Member = out;
    }
    return this.v1Member;
  }

  /** A fieldsV1 this process encoded (and nobody changed since: stored objects are not mutated) is not read again. */
  static fromFieldsV1(v: unknown): FieldSet {
    return runNow(FieldSet.fromFieldsV1Walk(v));
  }

  static *fromFieldsV1Walk(v: unknown): Walk<FieldSet> {
    const known = v && typeof v === 'object' ? decoded.get(v) : undefined;
    if (known) return known;
    const set = (yield* readV1(v, 0)).children ?? new FieldSet();
    if (v && typeof v === 'object' && set.weight() >= REMEMBERED_WEIGHT) decoded.set(v, set);
    return set;
  }
}

/**
 * Decoded field sets by their fieldsV1, kept while the object holding it lives. Only big ones: a set costs
 * more memory than its fieldsV1, and a small one decodes in microseconds.
 */
const decoded = new WeakMap<object, FieldSet>();
const REMEMBERED_WEIGHT = 1024;

function sortedElements(pes: PathElement[]): PathElement[] {
  return runNow(sortByElement(pes, (pe) => pe));
}

function sortedChildren(children: Map<string, Child>): Child[] {
  return runNow(sortByElement([...children.values()], (c) => c.pe));
}

/** From this many elements a node is sorted by its plain strings when it can be. */
const BIG_NODE = 256;

const NOT_PLAIN = /[\uD800-\uFFFF]/;

/**
 * Element order. A big node is almost always a map's fields or a set's strings: those, when every one
 * is below U+D800 (where UTF-16 order is Go's byte order), sort natively instead of by compareElements.
 */
function* sortByElement<T>(items: T[], peOf: (t: T) => PathElement): Walk<T[]> {
  if (items.length < BIG_NODE) return items.sort((a, b) => compareElements(peOf(a), peOf(b)));
  const keyed: Array<readonly [string, T]> = [];
  let kind: 'field' | 'value' | undefined;
  for (const item of items) {
    const pe = peOf(item);
    const k = 'field' in pe ? 'field' : 'value' in pe && typeof pe.value === 'string' ? 'value' : undefined;
    const text = k === 'field' ? (pe as { field: string }).field : k === 'value' ? (pe as { value: string }).value : undefined;
    if (text === undefined || (kind && k !== kind) || NOT_PLAIN.test(text)) return yield* sortWalk(items, (a, b) => compareElements(peOf(a), peOf(b)));
    kind = k;
    keyed.push([text, item]);
    if (pauseAt(keyed.length)) yield;
  }
  yield* sortWalk(keyed, (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 0; i < keyed.length; i++) items[i] = keyed[i][1];
  return items;
}

/** emitContentsV1: keys in element order; a member with children also gets "." below it. */
function* emit(s: FieldSet): Walk<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const keys = new Map<string, PathElement>();
  for (const [k, pe] of s.members) keys.set(k, pe);
  for (const [k, c] of s.children) keys.set(k, c.pe);
  let n = 0;
  for (const [k] of yield* sortByElement([...keys.entries()], (e) => e[1])) {
    const child = s.children.get(k);
    out[k] = !child ? {} : s.members.has(k) ? yield* child.set.memberFieldsV1() : yield* child.set.contentsV1();
    if (pauseAt(++n)) yield;
  }
  return out;
}

const MAX_DEPTH = 1000;

/** readIterV1: an object's "." marks membership; a key with an empty object below is a member. */
function* readV1(v: unknown, depth: number): Walk<{ children?: FieldSet; isMember: boolean }> {
  if (depth > MAX_DEPTH) throw new Error('fieldsV1 nested too deeply');
  if (v === null) return { isMember: true };
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`ReadMapCB: expect { or n, but found ${typeof v}`);
  let children: FieldSet | undefined;
  let isMember = false;
  const obj = v as Record<string, unknown>;
  let n = 0;
  for (const key of Object.keys(obj)) {
    const sub = obj[key];
    if (key === '.') { isMember = true; continue; }
    const pe = deserializeElement(key);
    if (!pe) continue;
    // A field's key is already canonical; other kinds are re-serialized (key order, spacing).
    const id = key.startsWith('f:') ? key : serializeElement(pe);
    const r = yield* readV1(sub, depth + 1);
    if (pauseAt(++n)) yield;
    if (r.isMember) (children ??= new FieldSet()).members.set(id, pe);
    if (r.children && !r.children.empty()) {
      children ??= new FieldSet();
      const existing = children.children.get(id);
      children.children.set(id, { pe, set: existing ? existing.set.union(r.children) : r.children });
    }
  }
  if (!children) isMember = true;
  return { children, isMember };
}

