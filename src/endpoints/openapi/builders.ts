// OpenAPI v3 (per group-version) and v2 (Swagger 2.0) documents built from the resource
// definitions' zod schemas, shaped like what kube-apiserver publishes for CRDs
// (apiextensions-apiserver's controller/openapi/builder).
import { OpenApiBuilder, type OperationObject, type PathItemObject, type SchemaObject } from 'openapi3-ts/oas30';
import type { ResourceDefinition } from '../../registry/resource.js';
import {
  SCHEMA_REF_PREFIX, kindSchemaName, metaV1, registerKind, registeredJsonSchemas, schemaClosure, schemaIdOf,
  type JsonSchema,
} from '../../apimachinery/schema/registry.js';
import { docs } from '../../apimachinery/schema/metav1.js';
import { paramsFor, pathsOf, tagOf } from './operations.js';

const ref = (name: string) => ({ $ref: `${SCHEMA_REF_PREFIX}${name}` });
const listKind = (def: ResourceDefinition) => `${def.kind}List`;

function kindName(def: ResourceDefinition): string {
  let id = schemaIdOf(def.schema);
  if (!id) {
    registerKind({ group: def.group, version: def.version, kind: def.kind }, def.schema, def.description);
    id = kindSchemaName(def);
  }
  return id;
}

function listSchema(def: ResourceDefinition, itemName: string): JsonSchema {
  return {
    description: `${listKind(def)} is a list of ${def.kind}`,
    type: 'object',
    properties: {
      apiVersion: { description: docs.apiVersion, type: 'string' },
      items: {
        description: `List of ${def.plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md`,
        type: 'array',
        items: ref(itemName),
      },
      kind: { description: docs.kind, type: 'string' },
      metadata: { description: docs.listMetadata, allOf: [ref(metaV1('ListMeta'))] },
    },
    required: ['items'],
    'x-kubernetes-group-version-kind': [{ group: def.group, kind: listKind(def), version: def.version }],
  };
}

function gvk(def: ResourceDefinition) { return { group: def.group, version: def.version, kind: def.kind }; }

/** Each kind's schema and List schema, and every schema the documents must carry (v2 and v3 alike). */
function documentSchemas(defs: ResourceDefinition[]) {
  const extra: Record<string, JsonSchema> = {};
  const roots: string[] = [metaV1('Status'), metaV1('DeleteOptions'), metaV1('Patch')];
  const kinds = defs.map((def) => {
    const kindRef = kindName(def);
    const listRef = kindSchemaName({ ...gvk(def), kind: listKind(def) });
    extra[listRef] = listSchema(def, kindRef);
    roots.push(kindRef);
    return { def, kindRef, listRef };
  });
  const schemas = { ...registeredJsonSchemas(), ...extra };
  return { kinds, schemas, schemaNames: schemaClosure([...roots, ...Object.keys(extra)], schemas) };
}

/** The OpenAPI 3.0 document of one group-version. */
export function buildOpenApiV3(group: string, version: string, defs: ResourceDefinition[]): Record<string, unknown> {
  const { kinds, schemaNames, schemas } = documentSchemas(defs);
  const b = OpenApiBuilder.create()
    .addOpenApiVersion('3.0.0')
    .addInfo({ title: 'Kubernetes', version: 'unversioned' });

  for (const { def, kindRef, listRef } of kinds) {
    for (const p of pathsOf(def, kindRef, listRef)) {
      const item: PathItemObject = {};
      for (const o of p.ops) {
        const op: OperationObject = {
          description: o.description,
          operationId: o.operationId,
          tags: [tagOf(group, version)],
          parameters: [...p.pathParams, ...paramsFor(o.action)],
          responses: {
            ...Object.fromEntries(Object.entries(o.responses).map(([code, r]) => {
              const contentTypes = o.action === 'list' ? ['application/json', 'application/json;stream=watch'] : ['application/json'];
              return [code, { description: r.description, content: Object.fromEntries(contentTypes.map((ct) => [ct, { schema: ref(r.schema) }])) }];
            })),
            401: { description: 'Unauthorized' },
          },
          'x-kubernetes-action': o.action,
          'x-kubernetes-group-version-kind': gvk(def),
        };
        if (o.request) {
          op.requestBody = {
            content: Object.fromEntries(o.request.contentTypes.map((ct) => [ct, { schema: ref(o.request!.schema) }])),
            required: o.request.required,
          };
        }
        item[o.method] = op;
      }
      b.addPath(p.path, item);
    }
  }
  for (const name of schemaNames) b.addSchema(name, schemas[name] as SchemaObject);
  return b.getSpec() as unknown as Record<string, unknown>;
}

/** Rewrites a v3 schema into Swagger 2.0: #/definitions refs, no `nullable` (x-nullable instead). */
function toV2Schema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toV2Schema);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string') out.$ref = v.replace(SCHEMA_REF_PREFIX, '#/definitions/');
    else if (k === 'nullable') { if (v === true) out['x-nullable'] = true; }
    else out[k] = toV2Schema(v);
  }
  return out;
}

/** The Swagger 2.0 document for all our group-versions (what the aggregator merges into the cluster's /openapi/v2). */
export function buildOpenApiV2(defs: ResourceDefinition[]): Record<string, unknown> {
  const { kinds, schemaNames, schemas } = documentSchemas(defs);
  const paths: Record<string, unknown> = {};
  for (const { def, kindRef, listRef } of kinds) {
    for (const p of pathsOf(def, kindRef, listRef)) {
      const item: Record<string, unknown> = {};
      for (const o of p.ops) {
        const params: Record<string, unknown>[] = [...p.pathParams, ...paramsFor(o.action)].map((prm) => {
          const s = prm.schema as { type: string };
          const v2: Record<string, unknown> = { name: prm.name, in: prm.in, type: s.type, uniqueItems: true };
          if (prm.description) v2.description = prm.description;
          if (prm.required) v2.required = true;
          return v2;
        });
        if (o.request) {
          params.unshift({ name: 'body', in: 'body', required: o.request.required, schema: { $ref: `#/definitions/${o.request.schema}` } });
        }
        item[o.method] = {
          description: o.description,
          operationId: o.operationId,
          tags: [tagOf(def.group, def.version)],
          consumes: o.request ? o.request.contentTypes : ['*/*'],
          produces: o.action === 'list' ? ['application/json', 'application/json;stream=watch'] : ['application/json'],
          schemes: ['https'],
          parameters: params,
          responses: {
            ...Object.fromEntries(Object.entries(o.responses).map(([code, r]) => [code, { description: r.description, schema: { $ref: `#/definitions/${r.schema}` } }])),
            401: { description: 'Unauthorized' },
          },
          'x-kubernetes-action': o.action,
          'x-kubernetes-group-version-kind': gvk(def),
        };
      }
      paths[p.path] = item;
    }
  }
  const definitions: Record<string, unknown> = {};
  for (const name of schemaNames) definitions[name] = toV2Schema(schemas[name]);
  return { swagger: '2.0', info: { title: 'Kubernetes', version: 'unversioned' }, paths, definitions };
}
