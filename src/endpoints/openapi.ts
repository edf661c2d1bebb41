// OpenAPI v3 (per group-version, with the /openapi/v3 index) and v2 (Swagger 2.0) documents built
// from the resource definitions' zod schemas, shaped like what kube-apiserver publishes for CRDs
// (apiextensions-apiserver's controller/openapi/builder). Computed once at registration.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OpenApiBuilder, type OperationObject, type ParameterObject, type PathItemObject, type SchemaObject } from 'openapi3-ts/oas30';
import { etagMatches, sha512Hex } from './discovery.js';
import { parseAccept } from './negotiation.js';
import { verbsOf, type ResourceDefinition, type Verb } from '../registry/resource.js';
import {
  SCHEMA_REF_PREFIX, docs, kindSchemaName, metaV1, registerKind, registeredJsonSchemas, schemaClosure, schemaIdOf,
  type JsonSchema,
} from '../apimachinery/schemas.js';
import { errors } from '../apimachinery/status.js';

// ---- names, as kube-openapi / apiserver derive them ----

/** ToValidOperationID: drops non-letters, capitalising the letter after each dropped run. */
export function toValidOperationId(s: string, capitalizeFirst: boolean): string {
  let out = '';
  let capitalize = capitalizeFirst;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (/\p{L}/u.test(c) || c === '_' || (i !== 0 && /\d/.test(c))) {
      out += capitalize ? c.toUpperCase() : c;
      capitalize = false;
    } else {
      capitalize = true;
    }
  }
  return out;
}

/** GetOperationIDAndTags for /apis/<group>/<version>/... routes: verb + Group + Version + rest. */
export function operationId(verb: string, group: string, version: string, rest: string): string {
  const g = toValidOperationId(group.replace(/\.k8s\.io$/, ''), true);
  return verb + g + toValidOperationId(version, true) + toValidOperationId(rest, true);
}

function tagOf(group: string, version: string): string {
  return `${toValidOperationId(group.replace(/\.k8s\.io$/, ''), false)}_${toValidOperationId(version, false)}`;
}

const article = (word: string) => (/^[aeiou]/i.test(word) ? 'an ' : 'a ');

// ---- parameters (meta/v1 ListOptions, CreateOptions, UpdateOptions, PatchOptions, DeleteOptions) ----

const paramDocs: Record<string, { type: 'string' | 'integer' | 'boolean'; description: string }> = {
  pretty: { type: 'string', description: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)." },
  allowWatchBookmarks: { type: 'boolean', description: 'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server\'s discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.' },
  continue: { type: 'string', description: 'The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the "next key".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.' },
  fieldSelector: { type: 'string', description: 'A selector to restrict the list of returned objects by their fields. Defaults to everything.' },
  labelSelector: { type: 'string', description: 'A selector to restrict the list of returned objects by their labels. Defaults to everything.' },
  limit: { type: 'integer', description: 'limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.' },
  resourceVersion: { type: 'string', description: 'resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset' },
  resourceVersionMatch: { type: 'string', description: 'resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset' },
  sendInitialEvents: { type: 'boolean', description: '`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic "Bookmark" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `"k8s.io/initial-events-end": "true"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as "data at least as new as the provided `resourceVersion`"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as "consistent read" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=""` or `resourceVersion="0"` (for backward compatibility reasons) and to false otherwise.' },
  timeoutSeconds: { type: 'integer', description: 'Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.' },
  watch: { type: 'boolean', description: 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.' },
  dryRun: { type: 'string', description: docs.dryRun },
  fieldManager: { type: 'string', description: 'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.' },
  fieldManagerPatch: { type: 'string', description: 'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).' },
  fieldValidation: { type: 'string', description: 'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.' },
  force: { type: 'boolean', description: 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.' },
  gracePeriodSeconds: { type: 'integer', description: docs.gracePeriodSeconds },
  orphanDependents: { type: 'boolean', description: docs.orphanDependents },
  propagationPolicy: { type: 'string', description: docs.propagationPolicy },
};

function queryParam(name: string, docKey = name): ParameterObject {
  const d = paramDocs[docKey];
  return { name, in: 'query', description: d.description, schema: { type: d.type, uniqueItems: true } };
}

const listParams = ['allowWatchBookmarks', 'continue', 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds', 'watch'];
const deleteParams = ['dryRun', 'gracePeriodSeconds', 'orphanDependents', 'propagationPolicy'];
const writeParams = ['dryRun', 'fieldManager', 'fieldValidation'];

function paramsFor(action: string): ParameterObject[] {
  const p = [queryParam('pretty')];
  switch (action) {
    case 'list': return [...p, ...listParams.map((n) => queryParam(n))];
    case 'deletecollection': return [...p, ...['continue', ...deleteParams, 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds'].map((n) => queryParam(n))];
    case 'post': case 'put': return [...p, ...writeParams.map((n) => queryParam(n))];
    case 'patch': return [...p, queryParam('dryRun'), queryParam('fieldManager', 'fieldManagerPatch'), queryParam('fieldValidation'), queryParam('force')];
    case 'delete': return [...p, ...deleteParams.map((n) => queryParam(n))];
    default: return p;
  }
}

const namespaceParam: ParameterObject = {
  name: 'namespace', in: 'path', required: true,
  description: 'object name and auth scope, such as for teams and projects', schema: { type: 'string', uniqueItems: true },
};
const nameParam = (kind: string): ParameterObject => ({
  name: 'name', in: 'path', required: true, description: `name of the ${kind}`, schema: { type: 'string', uniqueItems: true },
});

/** Patch content types we implement. Strategic merge patch is deliberately absent: kubectl would send one. */
export const PATCH_CONTENT_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];

// ---- the documents ----

interface GroupVersion { group: string; version: string; defs: ResourceDefinition[] }

function groupVersions(defs: ResourceDefinition[]): GroupVersion[] {
  const out = new Map<string, GroupVersion>();
  for (const def of defs) {
    const key = `${def.group}/${def.version}`;
    if (!out.has(key)) out.set(key, { group: def.group, version: def.version, defs: [] });
    out.get(key)!.defs.push(def);
  }
  return [...out.values()];
}

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

type Action = 'list' | 'post' | 'deletecollection' | 'get' | 'put' | 'patch' | 'delete';

interface OpSpec {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  action: Action;
  verb: Verb;
  opVerb: string; // operationId verb, before ToValidOperationID
  description: string;
  request?: { schema: string; contentTypes: string[]; required: boolean };
  responses: Record<string, { description: string; schema: string }>;
}

function collectionOps(def: ResourceDefinition, kindRef: string, listRef: string): OpSpec[] {
  return [
    { method: 'get', action: 'list', verb: 'list', opVerb: 'list', description: `list objects of kind ${def.kind}`, responses: { 200: { description: 'OK', schema: listRef } } },
    {
      method: 'post', action: 'post', verb: 'create', opVerb: 'create', description: `create ${article(def.kind)}${def.kind}`,
      request: { schema: kindRef, contentTypes: ['application/json'], required: true },
      responses: { 200: { description: 'OK', schema: kindRef }, 201: { description: 'Created', schema: kindRef }, 202: { description: 'Accepted', schema: kindRef } },
    },
    {
      method: 'delete', action: 'deletecollection', verb: 'deletecollection', opVerb: 'deletecollection', description: `delete collection of ${def.kind}`,
      request: { schema: metaV1('DeleteOptions'), contentTypes: ['application/json'], required: false },
      responses: { 200: { description: 'OK', schema: metaV1('Status') } },
    },
  ];
}

function itemOps(def: ResourceDefinition, kindRef: string): OpSpec[] {
  return [
    { method: 'get', action: 'get', verb: 'get', opVerb: 'read', description: `read the specified ${def.kind}`, responses: { 200: { description: 'OK', schema: kindRef } } },
    {
      method: 'put', action: 'put', verb: 'update', opVerb: 'replace', description: `replace the specified ${def.kind}`,
      request: { schema: kindRef, contentTypes: ['application/json'], required: true },
      responses: { 200: { description: 'OK', schema: kindRef }, 201: { description: 'Created', schema: kindRef } },
    },
    {
      method: 'patch', action: 'patch', verb: 'patch', opVerb: 'patch', description: `partially update the specified ${def.kind}`,
      request: { schema: metaV1('Patch'), contentTypes: PATCH_CONTENT_TYPES, required: true },
      responses: { 200: { description: 'OK', schema: kindRef }, 201: { description: 'Created', schema: kindRef } },
    },
    {
      method: 'delete', action: 'delete', verb: 'delete', opVerb: 'delete', description: `delete ${article(def.kind)}${def.kind}`,
      request: { schema: metaV1('DeleteOptions'), contentTypes: ['application/json'], required: false },
      responses: { 200: { description: 'OK', schema: metaV1('Status') }, 202: { description: 'Accepted', schema: metaV1('Status') } },
    },
  ];
}

/** A format-neutral description of one resource's paths; v3 and v2 are rendered from it. */
interface PathSpec { path: string; pathParams: ParameterObject[]; ops: (OpSpec & { operationId: string })[] }

function pathsOf(def: ResourceDefinition, kindRef: string, listRef: string): PathSpec[] {
  const verbs = new Set(verbsOf(def));
  const base = `/apis/${def.group}/${def.version}`;
  const ns = def.namespaced ? 'Namespaced' : '';
  const id = (o: OpSpec) => operationId(o.opVerb === 'deletecollection' ? 'delete' : o.opVerb, def.group, def.version,
    `${o.opVerb === 'deletecollection' ? 'Collection' : ''}${ns}${def.kind}`);
  const withIds = (ops: OpSpec[]) => ops.filter((o) => verbs.has(o.verb)).map((o) => ({ ...o, operationId: id(o) }));

  const out: PathSpec[] = [];
  const root = def.namespaced ? `${base}/namespaces/{namespace}/${def.plural}` : `${base}/${def.plural}`;
  const rootParams = def.namespaced ? [namespaceParam] : [];
  if (def.namespaced && verbs.has('list')) {
    const list = collectionOps(def, kindRef, listRef)[0];
    out.push({
      path: `${base}/${def.plural}`, pathParams: [],
      ops: [{ ...list, operationId: operationId('list', def.group, def.version, `${def.kind}ForAllNamespaces`) }],
    });
  }
  const coll = withIds(collectionOps(def, kindRef, listRef));
  if (coll.length) out.push({ path: root, pathParams: rootParams, ops: coll });
  const items = withIds(itemOps(def, kindRef));
  if (items.length) out.push({ path: `${root}/{name}`, pathParams: [nameParam(def.kind), ...rootParams], ops: items });
  return out;
}

function gvk(def: ResourceDefinition) { return { group: def.group, version: def.version, kind: def.kind }; }

export interface BuiltDocument { json: Buffer; hash: string }

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

function built(doc: unknown): BuiltDocument {
  const json = Buffer.from(JSON.stringify(doc));
  return { json, hash: sha512Hex(json) };
}

// ---- serving ----

function acceptsJson(accept: string | undefined): boolean {
  return parseAccept(accept).some((r) =>
    (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) || (r.type === '*' && r.subtype === '*'));
}

function sendDoc(req: FastifyRequest, reply: FastifyReply, doc: BuiltDocument, lastModified: string): FastifyReply {
  const etag = `"${doc.hash}"`;
  reply.header('ETag', etag).header('Last-Modified', lastModified);
  if (etagMatches(req.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.code(200).header('Content-Type', 'application/json').send(doc.json);
}

export function v3Url(group: string, version: string, hash: string): string {
  return `/openapi/v3/apis/${group}/${version}?hash=${hash}`;
}

export function registerOpenApiRoutes(app: FastifyInstance, defs: ResourceDefinition[]): void {
  const lastModified = new Date().toUTCString();
  const gvs = groupVersions(defs).map((gv) => ({ ...gv, doc: built(buildOpenApiV3(gv.group, gv.version, gv.defs)) }));
  const index = built({
    paths: Object.fromEntries(gvs.map((gv) => [`apis/${gv.group}/${gv.version}`, { serverRelativeURL: v3Url(gv.group, gv.version, gv.doc.hash) }])),
  });
  const v2 = built(buildOpenApiV2(defs));
  const jsonOnly = () => errors.notAcceptable(['application/json']);

  app.get('/openapi/v3', async (req, reply) => sendDoc(req, reply, index, lastModified));

  for (const gv of gvs) {
    app.get(`/openapi/v3/apis/${gv.group}/${gv.version}`, async (req, reply) => {
      reply.header('Vary', 'Accept');
      if (!acceptsJson(req.headers.accept)) throw jsonOnly();
      const hash = (req.query as Record<string, string | string[] | undefined>).hash;
      const wanted = Array.isArray(hash) ? hash[0] : hash;
      if (wanted) {
        if (wanted !== gv.doc.hash) {
          reply.header('ETag', `"${gv.doc.hash}"`);
          return reply.redirect(v3Url(gv.group, gv.version, gv.doc.hash), 301);
        }
        reply.header('Cache-Control', 'public, immutable');
        reply.header('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
      }
      return sendDoc(req, reply, gv.doc, lastModified);
    });
  }
  app.get('/openapi/v3/*', async () => { throw errors.pathNotFound(); });

  app.get('/openapi/v2', async (req, reply) => {
    reply.header('Vary', 'Accept');
    // kubectl asks for protobuf only (application/com.github.proto-openapi.spec.v2@v1.0+protobuf), which we don't serve.
    if (!acceptsJson(req.headers.accept)) throw jsonOnly();
    return sendDoc(req, reply, v2, lastModified);
  });
}
