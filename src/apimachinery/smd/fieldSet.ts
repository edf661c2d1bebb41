// A set of field paths as a trie (fieldpath/set.go): the members of a node are the path elements that
// are themselves in the set; its children hold the deeper members. Nodes are keyed by the element's
// fieldsV1 key, which identifies it; order is only imposed when printed or iterated.
import { compareElements, deserializeElement, serializeElement, type Path, type PathElement } from './pathElement.js';

interface Child { pe: PathElement; set: FieldSet }

export class FieldSet {
  readonly members = new Map<string, PathElement>();
  readonly children = new Map<string, Child>();

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

  union(o: FieldSet): FieldSet {
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
    for (const [k, pe] of this.members) if (o.members.has(k)) out.members.set(k, pe);
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
    return emit(this, false);
  }

  static fromFieldsV1(v: unknown): FieldSet {
    return readV1(v, 0).children ?? new FieldSet();
  }
}

function sortedElements(pes: PathElement[]): PathElement[] {
  return pes.sort(compareElements);
}

function sortedChildren(children: Map<string, Child>): Child[] {
  return [...children.values()].sort((a, b) => compareElements(a.pe, b.pe));
}

function emit(s: FieldSet, includeSelf: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (includeSelf && (s.members.size || s.children.size)) out['.'] = {};
  const keys = new Map<string, PathElement>();
  for (const [k, pe] of s.members) keys.set(k, pe);
  for (const [k, c] of s.children) keys.set(k, c.pe);
  const ordered = [...keys.entries()].sort((a, b) => compareElements(a[1], b[1]));
  for (const [k] of ordered) {
    const child = s.children.get(k);
    out[k] = child ? emit(child.set, s.members.has(k)) : {};
  }
  return out;
}

const MAX_DEPTH = 1000;

/** readIterV1: an object's "." marks membership; a key with an empty object below is a member. */
function readV1(v: unknown, depth: number): { children?: FieldSet; isMember: boolean } {
  if (depth > MAX_DEPTH) throw new Error('fieldsV1 nested too deeply');
  if (v === null) return { isMember: true };
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`ReadMapCB: expect { or n, but found ${typeof v}`);
  let children: FieldSet | undefined;
  let isMember = false;
  for (const [key, sub] of Object.entries(v as Record<string, unknown>)) {
    if (key === '.') { isMember = true; continue; }
    const pe = deserializeElement(key);
    if (!pe) continue;
    // A field's key is already canonical; other kinds are re-serialized (key order, spacing).
    const id = key.startsWith('f:') ? key : serializeElement(pe);
    const r = readV1(sub, depth + 1);
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

