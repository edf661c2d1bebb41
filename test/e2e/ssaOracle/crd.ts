// The oracle's CRD: its openAPIV3Schema is derived from the Llama schema our server publishes, so a
// field or marker we add (e.g. status.conditions as a map-list keyed by type) reaches the oracle by itself.
import type { HttpsResult } from '../e2e.helpers.js';
import { eventually } from '../e2e.helpers.js';

export type JsonSchema = { [key: string]: unknown };

/** Keys a CRD's JSONSchemaProps may carry and a structural schema allows (apiextensions v1 types.go). */
const CRD_KEYS = new Set([
  'type', 'format', 'description', 'title', 'default', 'enum', 'nullable', 'required',
  'properties', 'items', 'additionalProperties',
  'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'multipleOf',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'maxProperties', 'minProperties',
]);
const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

function resolveRef(ref: string, components: Record<string, JsonSchema>): JsonSchema {
  const m = /^#\/components\/schemas\/(.+)$/.exec(ref);
  const target = m ? components[m[1]] : undefined;
  if (!target) throw new Error(`unresolvable $ref ${ref}`);
  return target;
}

/**
 * One schema node as a CRD node: `$ref` and single-element `allOf: [{$ref}]` wrappers are inlined
 * (the wrapper's own keys, e.g. description or default, win), keys a CRD cannot carry are dropped,
 * `uniqueItems: true` is dropped (CRDs forbid it), x-kubernetes-* markers are kept.
 */
export function toCrdNode(node: JsonSchema, components: Record<string, JsonSchema>, depth = 0): JsonSchema {
  if (depth > 64) throw new Error('schema nests deeper than 64 levels (a $ref cycle?)');
  let merged: JsonSchema = { ...node };
  for (let guard = 0; guard < 16; guard++) {
    if (typeof merged.$ref === 'string') {
      const { $ref, ...rest } = merged;
      merged = { ...resolveRef($ref as string, components), ...rest };
    } else if (Array.isArray(merged.allOf) && merged.allOf.length === 1 && isObject(merged.allOf[0]) && typeof merged.allOf[0].$ref === 'string') {
      const { allOf, ...rest } = merged;
      merged = { ...resolveRef((allOf as JsonSchema[])[0].$ref as string, components), ...rest };
    } else break;
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(merged)) {
    if (k.startsWith('x-kubernetes-')) {
      if (k === 'x-kubernetes-group-version-kind') continue; // a built-in marker, not a CRD one
      out[k] = v;
    } else if (!CRD_KEYS.has(k)) continue;
    else if (k === 'properties' && isObject(v)) {
      out.properties = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, toCrdNode(s as JsonSchema, components, depth + 1)]));
    } else if (k === 'items' && isObject(v)) out.items = toCrdNode(v, components, depth + 1);
    else if (k === 'additionalProperties' && isObject(v)) out.additionalProperties = toCrdNode(v, components, depth + 1);
    else out[k] = v;
  }
  return out;
}

/** The Llama schema of our published OpenAPI v3 document, as a CRD's openAPIV3Schema (metadata only `type: object`). */
export function crdSchemaFromOpenApi(doc: unknown, schemaName = 'com.example.farm.v1alpha.Llama'): JsonSchema {
  const components = (isObject(doc) && isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : undefined) as Record<string, JsonSchema> | undefined;
  if (!components?.[schemaName]) throw new Error(`${schemaName} not in the OpenAPI document`);
  const root = toCrdNode(components[schemaName], components);
  if (!isObject(root.properties)) throw new Error(`${schemaName} has no properties`);
  // A CRD may say nothing about metadata but its type: kube-apiserver supplies ObjectMeta's schema (and its SSA markers).
  root.properties = { ...root.properties, metadata: { type: 'object' } };
  return root;
}

export function llamaCrd(group: string, schema: JsonSchema): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
    metadata: { name: `llamas.${group}` },
    spec: {
      group, scope: 'Namespaced',
      names: { kind: 'Llama', listKind: 'LlamaList', plural: 'llamas', singular: 'llama' },
      versions: [{ name: 'v1alpha', served: true, storage: true, schema: { openAPIV3Schema: schema }, subresources: { status: {} } }],
    },
  };
}

export type Call = (method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string> }) => Promise<HttpsResult>;

/** Creates the CRD and waits until it is Established and its resource answers a list. */
export async function registerCrd(call: Call, group: string, schema: JsonSchema, timeoutMs = 60_000): Promise<void> {
  const created = await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: llamaCrd(group, schema) });
  if (created.status !== 201) throw new Error(`creating the CRD llamas.${group}: ${created.status} ${created.body}`);
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const got = await call('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/llamas.${group}`);
    const conditions = (got.json?.status?.conditions ?? []) as Array<{ type: string; status: string; message?: string }>;
    const established = conditions.some((c) => c.type === 'Established' && c.status === 'True');
    last = JSON.stringify(conditions);
    if (established && (await call('GET', `/apis/${group}/v1alpha/llamas`)).status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`CRD llamas.${group} not Established within ${timeoutMs} ms (conditions: ${last})`);
}

/** Creates a namespace for the test's objects (201 or the test fails). */
export async function createNamespace(call: Call, name: string): Promise<void> {
  const r = await call('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  if (r.status !== 201) throw new Error(`creating namespace ${name}: ${r.status} ${r.body}`);
}

/** Our published OpenAPI v3 document as clients get it through the aggregator (fetched on its own schedule). */
export async function publishedOpenApi(call: Call): Promise<JsonSchema> {
  return eventually('our OpenAPI v3 document through kube-apiserver', 60_000, async () => {
    const r = await call('GET', '/openapi/v3/apis/farm.example.com/v1alpha');
    const schemas = (r.json as { components?: { schemas?: Record<string, unknown> } } | undefined)?.components?.schemas;
    return r.status === 200 && schemas?.['com.example.farm.v1alpha.Llama'] ? (r.json as JsonSchema) : undefined;
  }, 500);
}
