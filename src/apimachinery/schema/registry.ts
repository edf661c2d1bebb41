// The schema machinery: our zod registry of schemas under upstream's OpenAPI names, the naming of
// Kind schemas, and the JSON Schema those registrations produce. OpenAPI (endpoints/openapi) and
// validation (registry/validation.ts) both read that JSON Schema, so one definition drives both.
// The meta/v1 schemas themselves live in metav1.ts; kindSchema (kind.ts) combines the two.
import { z } from 'zod';

/** What a registered schema carries besides its id (descriptions and x-kubernetes-* extensions). */
export interface KubeSchemaMeta {
  id?: string;
  description?: string;
  [extension: `x-${string}`]: unknown;
}

/** Our registry: only schemas with an upstream-style id (components.schemas names) live here. */
export const kubeRegistry = z.registry<KubeSchemaMeta>();

/** A JSON Schema node as z.toJSONSchema emits it (OpenAPI 3.0 dialect). */
export type JsonSchema = Record<string, unknown> & {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  $ref?: string;
  enum?: unknown[];
  nullable?: boolean;
};

export const SCHEMA_REF_PREFIX = '#/components/schemas/';

export const metaV1 = (name: string) => `io.k8s.apimachinery.pkg.apis.meta.v1.${name}`;

// ---- Kind schema names and registration ----

export interface GroupVersionKind { group: string; version: string; kind: string }

/**
 * The components.schemas name upstream gives a CRD's kind: the group reversed like a Java package,
 * then version and kind (util.ToRESTFriendlyName): farm.example.com/v1alpha Llama → com.example.farm.v1alpha.Llama.
 */
export function kindSchemaName(gvk: GroupVersionKind): string {
  const group = gvk.group ? gvk.group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${group}.${gvk.version}.${gvk.kind}`;
}

const kinds = new Map<string, z.ZodType>();

function gvkKey(gvk: GroupVersionKind) { return `${gvk.group}/${gvk.version}/${gvk.kind}`; }

/** Registers a Kind's whole-object schema under its upstream-style name with its GVK extension. */
export function registerKind(gvk: GroupVersionKind, schema: z.ZodType, description: string): void {
  const key = gvkKey(gvk);
  const old = kinds.get(key);
  if (old === schema) return;
  if (old) kubeRegistry.remove(old);
  const existing = kubeRegistry.get(schema);
  if (existing?.id && existing.id !== kindSchemaName(gvk)) kubeRegistry.remove(schema);
  kubeRegistry.add(schema, {
    ...(kubeRegistry.get(schema) ?? {}),
    id: kindSchemaName(gvk),
    description,
    'x-kubernetes-group-version-kind': [{ group: gvk.group, kind: gvk.kind, version: gvk.version }],
  });
  kinds.set(key, schema);
  generation++;
}

/** The id a schema is registered under, if any. */
export function schemaIdOf(schema: z.ZodType): string | undefined {
  return kubeRegistry.get(schema)?.id;
}

// ---- JSON Schema production ----

/**
 * Descriptions set with .describe()/.meta() live in zod's global registry; ids and registered metadata
 * in ours. toJSONSchema reads one metadata registry, so hand it a view over both.
 */
const mergedMetadata = {
  get(schema: z.core.$ZodType): Record<string, unknown> | undefined {
    const a = z.globalRegistry.get(schema as never) as Record<string, unknown> | undefined;
    const b = kubeRegistry.get(schema as never) as Record<string, unknown> | undefined;
    if (!a && !b) return undefined;
    return { ...a, ...b };
  },
  has(schema: z.core.$ZodType) { return z.globalRegistry.has(schema as never) || kubeRegistry.has(schema as never); },
} as unknown as z.core.$ZodRegistry<KubeSchemaMeta>;

/** A schema's description, from either registry. */
export function describedOf(s: z.ZodType): string | undefined {
  return (mergedMetadata.get(s as never) as { description?: string } | undefined)?.description;
}

let generation = 0;
let cached: { key: string; schemas: Record<string, JsonSchema> } | undefined;

const SAFE = Number.MAX_SAFE_INTEGER;

/** Post-processing towards what Kubernetes publishes: no $id, preserve-unknown-fields instead of `additionalProperties: {}`, int64 without JS safe-integer bounds. */
function kubify(node: unknown): void {
  if (Array.isArray(node)) { node.forEach(kubify); return; }
  if (!node || typeof node !== 'object') return;
  const s = node as JsonSchema;
  delete s.$id;
  const ap = s.additionalProperties;
  if (ap === true || (ap && typeof ap === 'object' && Object.keys(ap).length === 0)) {
    delete s.additionalProperties;
    s['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (s.type === 'integer') {
    if (s.minimum === -SAFE) delete s.minimum;
    if (s.maximum === SAFE) delete s.maximum;
  }
  for (const v of Object.values(s)) if (v && typeof v === 'object') kubify(v);
}

/** Every registered schema as OpenAPI 3.0 JSON Schema, keyed by its components.schemas name (computed once per registration change). */
export function registeredJsonSchemas(): Record<string, JsonSchema> {
  const key = `${generation}:${registrySize()}`;
  if (cached && cached.key === key) return cached.schemas;
  const out = z.toJSONSchema(kubeRegistry, {
    target: 'openapi-3.0',
    io: 'input',
    metadata: mergedMetadata,
    unrepresentable: 'any',
    uri: (id) => `${SCHEMA_REF_PREFIX}${id}`,
  }) as unknown as { schemas: Record<string, JsonSchema> };
  kubify(out.schemas);
  cached = { key, schemas: out.schemas };
  return out.schemas;
}

function registrySize(): number {
  return (kubeRegistry as unknown as { _idmap: Map<string, unknown> })._idmap?.size ?? 0;
}

/** Follows $ref and single-element allOf wrappers (how zod references a registered schema with a local description). */
export function resolveSchema(s: JsonSchema | undefined, schemas: Record<string, JsonSchema>): JsonSchema | undefined {
  let cur = s;
  for (let i = 0; cur && i < 32; i++) {
    if (typeof cur.$ref === 'string') {
      cur = schemas[cur.$ref.slice(SCHEMA_REF_PREFIX.length)];
      continue;
    }
    if (Array.isArray(cur.allOf) && cur.allOf.length === 1 && !cur.properties && !cur.type) {
      const inner = resolveSchema(cur.allOf[0], schemas);
      if (!inner) return cur;
      // Local keywords (nullable, default, description) apply on top of the referenced schema.
      const { allOf: _a, ...local } = cur;
      return { ...inner, ...local };
    }
    return cur;
  }
  return cur;
}

/** All component names reachable from the given roots through $ref. */
export function schemaClosure(roots: string[], schemas: Record<string, JsonSchema>): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name) || !schemas[name]) return;
    seen.add(name);
    walkRefs(schemas[name], visit);
  };
  roots.forEach(visit);
  return [...seen].sort();
}

function walkRefs(node: unknown, onRef: (name: string) => void): void {
  if (Array.isArray(node)) { node.forEach((n) => walkRefs(n, onRef)); return; }
  if (!node || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith(SCHEMA_REF_PREFIX)) onRef(v.slice(SCHEMA_REF_PREFIX.length));
    else if (v && typeof v === 'object') walkRefs(v, onRef);
  }
}
