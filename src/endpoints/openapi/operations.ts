// The OpenAPI operation data, as kube-apiserver publishes it for CRDs: operation ids and tags
// (kube-openapi's naming), query/path parameters, and each action's request and responses.
// Format-neutral: builders.ts renders it as v3 and v2.
import type { ParameterObject } from 'openapi3-ts/oas30';
import { hasStatusSubresource, verbsOf, type ResourceDefinition, type Verb } from '../../registry/resource.js';
import { docs } from '../../apimachinery/schema/metav1.js';
import { metaV1 } from '../../apimachinery/schema/registry.js';
import { PATCH_CONTENT_TYPES } from '../mediaTypes.js';

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

export function tagOf(group: string, version: string): string {
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

export function paramsFor(action: string): ParameterObject[] {
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

export function pathsOf(def: ResourceDefinition, kindRef: string, listRef: string): PathSpec[] {
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
  if (hasStatusSubresource(def)) out.push({ path: `${root}/{name}/status`, pathParams: [nameParam(def.kind), ...rootParams], ops: statusOps(def, kindRef) });
  return out;
}

/**
 * /status: get, put and patch as the item's, named as kube publishes a CRD's status subresource
 * (readFarmExampleComV1alphaNamespacedLlamaStatus, "read status of the specified Llama").
 */
function statusOps(def: ResourceDefinition, kindRef: string): (OpSpec & { operationId: string })[] {
  const ns = def.namespaced ? 'Namespaced' : '';
  const what = (description: string) => description.replace(/ the specified /, ' status of the specified ');
  return itemOps(def, kindRef)
    .filter((o) => o.action === 'get' || o.action === 'put' || o.action === 'patch')
    .map((o) => ({ ...o, description: what(o.description), operationId: operationId(o.opVerb, def.group, def.version, `${ns}${def.kind}Status`) }));
}
