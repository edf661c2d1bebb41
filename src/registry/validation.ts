// Schema validation of a whole object against its resource's zod schema, reported the way
// apiextensions-apiserver reports OpenAPI schema failures (kubeOpenAPIResultToFieldErrors), plus
// the unknown-field list that fieldValidation=Strict|Warn|Ignore acts on.
import type { z } from 'zod';
import { everyValue } from '../apimachinery/jsonValue.js';
import type { ResourceDescriptor } from './resource.js';
import { FieldError } from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import {
  kindSchemaName, registerKind, registeredJsonSchemas, resolveSchema, schemaIdOf,
  type JsonSchema,
} from '../apimachinery/schema/registry.js';

export interface ValidationResult {
  /** The parsed object with defaults applied and unknown fields dropped; absent when there are errors. */
  value?: KubeObject;
  errors: FieldError[];
  /** Dotted paths of fields the schema does not know (`spec.foo`, `metadata.bar`, `spec.list[0].x`). */
  unknownFields: string[];
}

type PathItem = string | number;

function formatPath(path: readonly PathItem[]): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else s += s ? `.${p}` : p;
  }
  return s;
}

/** The JSON type name kube-openapi reports for a value ("string", "number", "integer" never: JSON has number). */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  if (t === 'object') return 'object';
  if (t === 'bigint') return 'number';
  return t;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

/** zod's `expected` → the OpenAPI type name upstream's message would carry. */
function expectedType(expected: string): string {
  switch (expected) {
    case 'int': return 'integer';
    case 'record': case 'map': return 'object';
    case 'tuple': case 'set': return 'array';
    case 'bigint': return 'integer';
    case 'date': return 'string';
    default: return expected;
  }
}

/** Resolves the component name and JSON Schema of a definition's whole-object schema. */
function rootSchemaOf(def: ResourceDescriptor): { root: JsonSchema | undefined; schemas: Record<string, JsonSchema> } {
  let id = schemaIdOf(def.schema);
  if (!id) {
    registerKind({ group: def.group, version: def.version, kind: def.kind }, def.schema, def.description);
    id = kindSchemaName(def);
  }
  const schemas = registeredJsonSchemas();
  return { root: schemas[id], schemas };
}

/**
 * A copy of the input with only the fields the schema knows, listing the others, and without `null`
 * values of non-nullable fields (apiextensions prunes those before validating, so a client's
 * `creationTimestamp: null` is harmless). It descends only where the schema does, so an unknown
 * subtree of any depth or size costs one path; x-kubernetes-preserve-unknown-fields values are kept as they are.
 */
function pruned(value: unknown, schema: JsonSchema | undefined, path: PathItem[], schemas: Record<string, JsonSchema>, unknown: string[], keepNulls = false): unknown {
  const s = resolveSchema(schema, schemas);
  if (!s || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    // Scalars have nothing to prune (and null items stay): a list of 260k finalizers is not copied.
    if (!s.items || value.every(isScalar)) return value;
    return value.map((item, i) => pruned(item, s.items, [...path, i], schemas, unknown, keepNulls));
  }
  if (s['x-kubernetes-preserve-unknown-fields'] === true && !s.properties) return value;
  const obj = value as Record<string, unknown>;
  const props = s.properties;
  const additional = s.additionalProperties;
  // A map of scalars (labels, annotations) has no field to prune unless a value is null.
  if (!props && additional && everyValue(obj, (v) => isScalar(v) && v !== null)) return value;
  const out: Record<string, unknown> = {};
  // "__proto__" would be a prototype assignment; every other key is a plain (fast) one.
  const put = (key: string, v: unknown) => {
    if (key === '__proto__') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
  };
  const additionalSchema = additional && typeof additional === 'object' ? additional : undefined;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  let unknownPrefix: string | undefined;
  for (const key of Object.keys(obj)) {
    const childSchema = props && Object.prototype.hasOwnProperty.call(props, key) ? props[key] : additionalSchema;
    if (!childSchema) {
      if (props && !preserve) {
        unknownPrefix ??= formatPath(path);
        unknown.push(unknownPrefix ? `${unknownPrefix}.${key}` : key);
      } else {
        put(key, obj[key]);
      }
      continue;
    }
    const child = obj[key];
    // ObjectMeta is decoded into its struct even then: its nulls are plain absences.
    const keep = keepNulls && !(path.length === 0 && key === 'metadata');
    if (child === null && !keep) {
      const cs = resolveSchema(childSchema, schemas);
      if (cs && cs.nullable !== true && cs['x-kubernetes-preserve-unknown-fields'] !== true) continue;
    }
    put(key, typeof child === 'object' && child !== null ? pruned(child, childSchema, [...path, key], schemas, unknown, keep) : child);
  }
  return out;
}

const isScalar = (v: unknown) => v === null || typeof v !== 'object';

/** The OpenAPI schema at a value path (through properties, additionalProperties and items). */
function schemaAt(def: ResourceDescriptor, path: readonly PropertyKey[]): JsonSchema | undefined {
  const { root, schemas } = rootSchemaOf(def);
  let cur = resolveSchema(root, schemas);
  for (const p of path) {
    if (!cur) return undefined;
    const props = cur.properties as Record<string, JsonSchema> | undefined;
    const next = typeof p === 'number' ? cur.items : props && Object.hasOwn(props, String(p)) ? props[String(p)] : cur.additionalProperties;
    cur = next && typeof next === 'object' ? resolveSchema(next as JsonSchema, schemas) : undefined;
  }
  return cur;
}

function issueToFieldError(issue: z.core.$ZodIssue, input: unknown, def: ResourceDescriptor): FieldError {
  const path = issue.path as PropertyKey[];
  const field = formatPath(path.map((p) => (typeof p === 'number' ? p : String(p))));
  const value = valueAt(input, path);
  const inBody = `${field} in body`;
  switch (issue.code) {
    case 'invalid_type': {
      if (value === undefined) return FieldError.required(field);
      const actual = jsonType(value);
      // zod's z.int() expects "number"; the published type (int64, int32) is "integer".
      const expected = issue.expected === 'number' && schemaAt(def, issue.path)?.type === 'integer' ? 'integer' : expectedType(issue.expected);
      // An integer field given a fractional number: kube-openapi reports the JSON type "number".
      return FieldError.typeInvalid(field, actual, `${inBody} must be of type ${expected}: "${actual}"`);
    }
    case 'invalid_value': {
      const allowed = issue.values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
      return FieldError.notSupported(field, value, allowed);
    }
    case 'too_small': {
      const min = Number(issue.minimum);
      switch (issue.origin) {
        case 'number': case 'int': case 'bigint':
          return FieldError.invalid(field, value, `${inBody} should be greater than ${issue.inclusive ? 'or equal to ' : ''}${min}`);
        case 'string':
          return FieldError.invalid(field, value, `${inBody} should be at least ${min} chars long`);
        case 'array': case 'set':
          return FieldError.invalid(field, value, `${inBody} should have at least ${min} items`);
        default:
          return FieldError.invalid(field, value, `${inBody} should have at least ${min} properties`);
      }
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      switch (issue.origin) {
        case 'number': case 'int': case 'bigint':
          return FieldError.invalid(field, value, `${inBody} should be less than ${issue.inclusive ? 'or equal to ' : ''}${max}`);
        case 'string':
          return new FieldError('FieldValueTooLong', field, `may not be more than ${max} bytes`);
        case 'array': case 'set':
          return new FieldError('FieldValueTooMany', field, `must have at most ${max} items`, Array.isArray(value) ? value.length : value, true);
        default:
          return new FieldError('FieldValueTooMany', field, `must have at most ${max} items`, value && typeof value === 'object' ? Object.keys(value).length : value, true);
      }
    }
    case 'invalid_format': {
      if (issue.format === 'regex' && 'pattern' in issue && issue.pattern) {
        return FieldError.invalid(field, value, `${inBody} should match '${issue.pattern}'`);
      }
      const format = issue.format === 'datetime' ? 'date-time' : issue.format;
      return FieldError.typeInvalid(field, value, `${inBody} must be of type ${format}: ${JSON.stringify(value)}`);
    }
    case 'not_multiple_of':
      return FieldError.invalid(field, value, `${inBody} should be a multiple of ${String(issue.divisor)}`);
    default:
      return FieldError.invalid(field, value ?? '', issue.message);
  }
}

/**
 * Validates an object against `def.schema`: zod's safeParse (which applies `.default()`s) mapped to
 * upstream-style field errors, and a list of unknown fields. Unknown fields never fail validation —
 * the caller decides (fieldValidation Strict/Warn/Ignore); they are already absent from `value`.
 */
type Held = Partial<Record<'labels' | 'annotations' | 'finalizers', unknown>>;

/**
 * ObjectMeta's label/annotation maps and finalizer list can hold 100k+ strings in a 3 MiB body, and
 * zod walks a record at ~2 µs an entry. When they are plainly of the right type (all strings), they
 * are taken out before zod and put back after it; anything else is left for zod to report.
 */
function holdStringCollections(input: unknown): Held {
  const held: Held = {};
  const meta = (input as { metadata?: unknown } | null)?.metadata;
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return held;
  const m = meta as Record<string, unknown>;
  for (const k of ['labels', 'annotations'] as const) {
    const v = m[k];
    if (v && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype && everyValue(v, (x) => typeof x === 'string')) {
      held[k] = v;
      m[k] = {};
    }
  }
  if (Array.isArray(m.finalizers) && allStrings(m.finalizers)) {
    held.finalizers = m.finalizers;
    m.finalizers = [];
  }
  return held;
}

function allStrings(xs: unknown[]): boolean {
  for (const x of xs) if (typeof x !== 'string') return false;
  return true;
}

function restore(obj: KubeObject, held: Held): KubeObject {
  if (Object.keys(held).length === 0) return obj;
  return { ...obj, metadata: { ...obj.metadata, ...held } as KubeObject['metadata'] };
}

/**
 * `keepNulls`: a server-side apply's result is not decoded from a body, so nothing prunes the nulls its
 * merge left (an emptied struct), and kube's validation reports them as the wrong type.
 */
export function validateObject(def: ResourceDescriptor, obj: unknown, opts: { keepNulls?: boolean } = {}): ValidationResult {
  const unknownFields: string[] = [];
  let input = obj;
  if (obj !== null && typeof obj === 'object') {
    const { root, schemas } = rootSchemaOf(def);
    input = pruned(obj, root, [], schemas, unknownFields, opts.keepNulls);
  }
  let known: Set<string> | undefined; // only strict zod objects need it: not built for every write
  const held = holdStringCollections(input);
  for (let attempt = 0; ; attempt++) {
    const result = def.schema.safeParse(input);
    if (result.success) return { value: restore(result.data as KubeObject, held), errors: [], unknownFields };
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    let dropped = false;
    for (const issue of result.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        // A strict object: upstream treats these as unknown fields, not invalid values. Drop and re-parse.
        const parent = valueAt(input, issue.path as PropertyKey[]);
        for (const k of issue.keys) {
          const p = formatPath([...(issue.path as PathItem[]), k]);
          known ??= new Set(unknownFields);
          if (!known.has(p)) { known.add(p); unknownFields.push(p); }
          if (parent && typeof parent === 'object') { delete (parent as Record<string, unknown>)[k]; dropped = true; }
        }
        continue;
      }
      const fe = issueToFieldError(issue, input, def);
      const key = fe.toString();
      if (!seen.has(key)) { seen.add(key); errors.push(fe); }
    }
    if (errors.length > 0 || !dropped || attempt >= 8) return { errors, unknownFields };
  }
}
