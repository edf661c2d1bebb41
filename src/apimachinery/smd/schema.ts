// The type model of structured-merge-diff (schema/elements.go) and its derivation from an OpenAPI
// schema by the markers kube-openapi reads (pkg/schemaconv): structs and granular or atomic maps,
// atomic lists, sets and maps keyed by fields, scalars, and untyped (deduced) values.
import { registeredJsonSchemas, resolveSchema, type JsonSchema } from '../schema/registry.js';

export type ScalarKind = 'numeric' | 'string' | 'boolean' | 'untyped';

export interface MapType {
  /** Struct fields; any other key takes elementType (or is not declared in the schema). */
  fields: Map<string, Atom>;
  elementType?: Atom;
  atomic: boolean;
}

export interface ListType {
  elementType: Atom;
  /** associative = a set (no keys) or a map list (keys). */
  associative: boolean;
  keys: string[];
}

/** An atom may allow several shapes (untyped: scalar, atomic list or granular map); the value picks one. */
export interface Atom {
  scalar?: ScalarKind;
  list?: ListType;
  map?: MapType;
  /** Defaults of struct fields (used for the key fields of associative list items). */
  defaults?: Map<string, unknown>;
}

/** The "deduced" type: a scalar, an atomic list of deduced values, or a granular map of them. */
export function untypedAtom(): Atom {
  const atom: Atom = { scalar: 'untyped' };
  atom.list = { elementType: atom, associative: false, keys: [] };
  atom.map = { fields: new Map(), elementType: atom, atomic: false };
  return atom;
}

const UNTYPED = untypedAtom();

/** The atom of an OpenAPI v3 schema, following $refs through `schemas`. */
export function atomFromOpenApi(root: JsonSchema, schemas: Record<string, JsonSchema>): Atom {
  const memo = new Map<JsonSchema, Atom>();
  const convert = (raw: JsonSchema | undefined, depth: number): Atom => {
    const s = resolveSchema(raw, schemas);
    if (!s || depth > 64) return UNTYPED;
    const cached = memo.get(s);
    if (cached) return cached;
    if (s['x-kubernetes-int-or-string'] === true) return UNTYPED;
    const type = s.type as string | undefined;
    const props = s.properties as Record<string, JsonSchema> | undefined;
    const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
    if (type === 'object' || props) {
      const atom: Atom = {};
      memo.set(s, atom);
      const fields = new Map<string, Atom>();
      const defaults = new Map<string, unknown>();
      for (const [name, p] of Object.entries(props ?? {})) {
        fields.set(name, convert(p, depth + 1));
        const d = resolveSchema(p, schemas)?.default ?? (p as JsonSchema).default;
        if (d !== undefined) defaults.set(name, d);
      }
      const ap = s.additionalProperties;
      let elementType: Atom | undefined;
      if (ap && typeof ap === 'object') elementType = convert(ap as JsonSchema, depth + 1);
      else if (ap === true || preserve || (!props && ap === undefined)) elementType = UNTYPED;
      atom.map = { fields, elementType, atomic: s['x-kubernetes-map-type'] === 'atomic' };
      if (defaults.size) atom.defaults = defaults;
      return atom;
    }
    if (type === 'array') {
      const listType = s['x-kubernetes-list-type'];
      const keys = (s['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
      return { list: { elementType: convert(s.items as JsonSchema | undefined, depth + 1), associative: listType === 'set' || listType === 'map', keys: listType === 'map' ? keys : [] } };
    }
    if (type === 'string') return { scalar: 'string' };
    if (type === 'number' || type === 'integer') return { scalar: 'numeric' };
    if (type === 'boolean') return { scalar: 'boolean' };
    return UNTYPED;
  };
  return convert(root, 0);
}

/** deduceAtom: of the shapes an atom allows, the one the value has (or the atom as it is). */
export function deduceAtom(atom: Atom, v: unknown): Atom {
  if (v === undefined) return atom;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') {
    if (atom.scalar) return { scalar: atom.scalar };
  } else if (Array.isArray(v)) {
    if (atom.list) return { list: atom.list };
  } else if (v !== null && typeof v === 'object') {
    if (atom.map) return { map: atom.map, defaults: atom.defaults };
  }
  return atom;
}

export function fieldType(m: MapType, key: string): Atom | undefined {
  return m.fields.get(key) ?? m.elementType;
}

const kindAtoms = new Map<string, { key: Record<string, JsonSchema>; atom: Atom }>();

/** The atom of a registered Kind schema (by its components name), rebuilt when the registry changes. */
export function atomOfRegistered(name: string): Atom {
  const schemas = registeredJsonSchemas();
  const hit = kindAtoms.get(name);
  if (hit && hit.key === schemas) return hit.atom;
  const root = schemas[name];
  if (!root) throw new Error(`no schema registered as ${name}`);
  const atom = atomFromOpenApi(root, schemas);
  kindAtoms.set(name, { key: schemas, atom });
  return atom;
}
