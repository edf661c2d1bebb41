import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUBECTL_BIN as KUBECTL } from '../helpers/kubectl.js';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import Fastify from 'fastify';
import { generate } from 'selfsigned';
import { z } from 'zod';
import { registerDiscoveryRoutes } from '../../src/endpoints/discovery/routes.js';
import { installErrorHandling } from '../../src/endpoints/http.js';
import { buildOpenApiV3 } from '../../src/endpoints/openapi/builders.js';
import { operationId, toValidOperationId } from '../../src/endpoints/openapi/operations.js';
import { registerOpenApiRoutes } from '../../src/endpoints/openapi/routes.js';
import type { ResourceDefinition } from '../../src/registry/resource.js';
import { kindSchema } from '../../src/apimachinery/schema/kind.js';
import { llamaShape, readOnlyProvider, writableProvider } from '../helpers/providers.js';

const writable = writableProvider;
const readOnly = readOnlyProvider;

const llama = llamaShape();
const barn: ResourceDefinition = {
  group: 'farm.example.com', version: 'v1alpha', kind: 'Barn', plural: 'barns', singular: 'barn',
  shortNames: [], categories: [], namespaced: true, description: 'Barn is a test-only read-only resource.',
  schema: kindSchema({ group: 'farm.example.com', version: 'v1alpha', kind: 'Barn', description: 'Barn.', spec: z.object({ size: z.number().optional().describe('Size.') }).describe('Barn spec.') }),
  columns: [], rest: readOnly,
};
const defs = [llama, barn];
const GV_PATH = '/openapi/v3/apis/farm.example.com/v1alpha';
const BASE = '/apis/farm.example.com/v1alpha';

function app() {
  const a = Fastify();
  installErrorHandling(a);
  registerOpenApiRoutes(a, defs);
  return a;
}

const sha512 = (s: string) => createHash('sha512').update(s).digest('hex').toUpperCase();
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const doc: Doc = buildOpenApiV3('farm.example.com', 'v1alpha', defs);
const GVK = { group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' };

describe('operation ids', () => {
  it('follows kube-openapi naming', () => {
    assert.equal(toValidOperationId('farm.example.com', true), 'FarmExampleCom');
    assert.equal(operationId('list', 'farm.example.com', 'v1alpha', 'NamespacedLlama'), 'listFarmExampleComV1alphaNamespacedLlama');
    assert.equal(operationId('list', 'apps', 'v1', 'Deployment'), 'listAppsV1Deployment');
    assert.equal(operationId('read', 'coordination.k8s.io', 'v1', 'NamespacedLease'), 'readCoordinationV1NamespacedLease');
  });
});

describe('OpenAPI v3 document', () => {
  it('has CRD-like paths, operations gated by the provider\'s verbs', () => {
    assert.equal(doc.openapi, '3.0.0');
    const ops = (p: string) => Object.keys(doc.paths[p] ?? {}).sort();
    assert.deepEqual(ops(`${BASE}/llamas`), ['get']);
    assert.deepEqual(ops(`${BASE}/namespaces/{namespace}/llamas`), ['delete', 'get', 'post']);
    assert.deepEqual(ops(`${BASE}/namespaces/{namespace}/llamas/{name}`), ['delete', 'get', 'patch', 'put']);
    assert.deepEqual(ops(`${BASE}/namespaces/{namespace}/llamas/{name}/status`), ['get', 'patch', 'put']);
    assert.equal(doc.paths[`${BASE}/namespaces/{namespace}/barns/{name}/status`], undefined);
    // read-only: list and get only
    assert.deepEqual(ops(`${BASE}/barns`), ['get']);
    assert.deepEqual(ops(`${BASE}/namespaces/{namespace}/barns`), ['get']);
    assert.deepEqual(ops(`${BASE}/namespaces/{namespace}/barns/{name}`), ['get']);

    const ids = Object.values(doc.paths).flatMap((item: Doc) => Object.values(item).map((o: Doc) => o.operationId)).sort();
    assert.deepEqual(ids.filter((i: string) => i.includes('Llama')), [
      'createFarmExampleComV1alphaNamespacedLlama',
      'deleteFarmExampleComV1alphaCollectionNamespacedLlama',
      'deleteFarmExampleComV1alphaNamespacedLlama',
      'listFarmExampleComV1alphaLlamaForAllNamespaces',
      'listFarmExampleComV1alphaNamespacedLlama',
      'patchFarmExampleComV1alphaNamespacedLlama',
      'patchFarmExampleComV1alphaNamespacedLlamaStatus',
      'readFarmExampleComV1alphaNamespacedLlama',
      'readFarmExampleComV1alphaNamespacedLlamaStatus',
      'replaceFarmExampleComV1alphaNamespacedLlama',
      'replaceFarmExampleComV1alphaNamespacedLlamaStatus',
    ]);
  });

  it('operations carry x-kubernetes-group-version-kind as an object and x-kubernetes-action', () => {
    const coll = doc.paths[`${BASE}/namespaces/{namespace}/llamas`];
    assert.deepEqual(coll.get['x-kubernetes-group-version-kind'], GVK);
    assert.equal(coll.get['x-kubernetes-action'], 'list');
    assert.equal(coll.post['x-kubernetes-action'], 'post');
    assert.equal(coll.delete['x-kubernetes-action'], 'deletecollection');
    const item = doc.paths[`${BASE}/namespaces/{namespace}/llamas/{name}`];
    assert.deepEqual(Object.fromEntries(Object.entries(item).map(([m, o]: [string, Doc]) => [m, o['x-kubernetes-action']])),
      { get: 'get', put: 'put', patch: 'patch', delete: 'delete' });
    for (const o of Object.values(item) as Doc[]) assert.deepEqual(o['x-kubernetes-group-version-kind'], GVK);
  });

  it('list operations take the list/watch query parameters', () => {
    const names = doc.paths[`${BASE}/namespaces/{namespace}/llamas`].get.parameters.map((p: Doc) => p.name).sort();
    assert.deepEqual(names, ['allowWatchBookmarks', 'continue', 'fieldSelector', 'labelSelector', 'limit', 'namespace', 'pretty',
      'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds', 'watch']);
    const all = doc.paths[`${BASE}/llamas`].get.parameters.map((p: Doc) => p.name);
    assert.ok(!all.includes('namespace'));
    assert.ok(all.includes('watch'));
  });

  it('PATCH declares fieldValidation inline and does not advertise strategic merge patch', () => {
    const patch = doc.paths[`${BASE}/namespaces/{namespace}/llamas/{name}`].patch;
    assert.ok(patch.parameters.some((p: Doc) => p.name === 'fieldValidation' && p.in === 'query' && !p.$ref));
    assert.deepEqual(Object.keys(patch.requestBody.content).sort(),
      ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json']);
    assert.ok(!JSON.stringify(doc).includes('strategic-merge-patch'));
    const names = patch.parameters.map((p: Doc) => p.name).sort();
    assert.deepEqual(names, ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'name', 'namespace', 'pretty']);
  });

  it('the Kind schema is named like a CRD\'s and carries the GVK as an array', () => {
    const s = doc.components.schemas['com.example.farm.v1alpha.Llama'];
    assert.ok(s, 'com.example.farm.v1alpha.Llama missing');
    assert.deepEqual(s['x-kubernetes-group-version-kind'], [GVK]);
    assert.equal(s.properties.metadata.allOf[0].$ref, '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
    assert.deepEqual(s.properties.spec.required.sort(), ['height', 'weight']);
    assert.equal(s.properties.spec.properties.color.default, 'white');
    assert.deepEqual(s.properties.spec.properties.color.enum, ['white', 'brown', 'black', 'grey', 'spotted']);
    const list = doc.components.schemas['com.example.farm.v1alpha.LlamaList'];
    assert.deepEqual(list['x-kubernetes-group-version-kind'], [{ ...GVK, kind: 'LlamaList' }]);
    assert.equal(list.properties.items.items.$ref, '#/components/schemas/com.example.farm.v1alpha.Llama');
    assert.equal(JSON.stringify(doc).includes('"$id"'), false);
  });

  it('includes the shared meta/v1 types under upstream names and every $ref resolves', () => {
    for (const n of ['ObjectMeta', 'ListMeta', 'Status', 'StatusDetails', 'StatusCause', 'DeleteOptions', 'Preconditions', 'Patch', 'OwnerReference', 'ManagedFieldsEntry', 'FieldsV1', 'Time']) {
      assert.ok(doc.components.schemas[`io.k8s.apimachinery.pkg.apis.meta.v1.${n}`], n);
    }
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
    for (const r of refs) assert.ok(doc.components.schemas[r], `dangling $ref ${r}`);
    const om = doc.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'];
    assert.deepEqual(Object.keys(om.properties).sort(), ['annotations', 'creationTimestamp', 'deletionGracePeriodSeconds', 'deletionTimestamp',
      'finalizers', 'generateName', 'generation', 'labels', 'managedFields', 'name', 'namespace', 'ownerReferences', 'resourceVersion', 'selfLink', 'uid']);
    assert.deepEqual(om.properties.generation, { description: om.properties.generation.description, type: 'integer', format: 'int64' });
  });

  it('every property of every schema has a description (kubectl explain --recursive is useful)', () => {
    const missing: string[] = [];
    const visit = (s: Doc, path: string) => {
      if (!s || typeof s !== 'object') return;
      for (const [k, p] of Object.entries(s.properties ?? {}) as [string, Doc][]) {
        if (!p.description) missing.push(`${path}.${k}`);
        visit(p, `${path}.${k}`);
      }
      if (s.items) visit(s.items, `${path}[]`);
      if (s.additionalProperties && typeof s.additionalProperties === 'object') visit(s.additionalProperties, `${path}{}`);
      for (const sub of s.allOf ?? []) visit(sub, path);
    };
    for (const [name, s] of Object.entries(doc.components.schemas)) {
      if (!(s as Doc).description) missing.push(name);
      visit(s, name);
    }
    assert.deepEqual(missing, []);
  });
});

describe('OpenAPI v3 endpoints', () => {
  it('the index lists only our group-version with the document hash', async () => {
    const a = app();
    const idx = await a.inject({ url: '/openapi/v3?timeout=32s', headers: { accept: 'application/json, */*' } });
    assert.equal(idx.statusCode, 200);
    assert.equal(idx.headers['content-type'], 'application/json');
    assert.equal(idx.headers.etag, `"${sha512(idx.body)}"`);
    const paths = idx.json().paths;
    assert.deepEqual(Object.keys(paths), ['apis/farm.example.com/v1alpha']);
    const url: string = paths['apis/farm.example.com/v1alpha'].serverRelativeURL;
    assert.match(url, /^\/openapi\/v3\/apis\/farm\.example\.com\/v1alpha\?hash=[0-9A-F]{128}$/);

    const res = await a.inject({ url: `${url}&timeout=32s`, headers: { accept: 'application/json' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const hash = url.split('hash=')[1];
    assert.equal(sha512(res.body), hash);
    assert.equal(res.headers.etag, `"${hash}"`);
    assert.equal(res.headers.vary, 'Accept');
    assert.equal(res.headers['cache-control'], 'public, immutable');
    const expires = Date.parse(res.headers.expires as string);
    assert.ok(expires > Date.now() + 360 * 24 * 3600 * 1000, `Expires ${res.headers.expires}`);

    const again = await a.inject({ url, headers: { 'if-none-match': `"${hash}"` } });
    assert.equal(again.statusCode, 304);
  });

  it('without a hash: no immutable caching; a stale hash redirects to the current URL', async () => {
    const a = app();
    const plain = await a.inject({ url: GV_PATH });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['cache-control'], undefined);
    const hash = sha512(plain.body);
    const stale = await a.inject({ url: `${GV_PATH}?hash=ABC` });
    assert.equal(stale.statusCode, 301);
    assert.equal(stale.headers.location, `${GV_PATH}?hash=${hash}`);
  });

  it('a non-JSON Accept is a 406 Status; unknown group-versions are 404', async () => {
    const a = app();
    const res = await a.inject({ url: GV_PATH, headers: { accept: 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf' } });
    assert.equal(res.statusCode, 406);
    assert.equal(res.json().kind, 'Status');
    const nf = await a.inject({ url: '/openapi/v3/apis/nope.example.com/v1' });
    assert.equal(nf.statusCode, 404);
    assert.equal(nf.json().kind, 'Status');
  });
});

describe('OpenAPI v2', () => {
  it('serves Swagger 2.0 JSON with #/definitions refs and PATCH consumes without SMP', async () => {
    const a = app();
    const res = await a.inject({ url: '/openapi/v2', headers: { accept: 'application/json' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const v2 = res.json();
    assert.equal(v2.swagger, '2.0');
    assert.ok(v2.definitions['com.example.farm.v1alpha.Llama']);
    assert.ok(!res.body.includes('#/components/'));
    const refs = [...res.body.matchAll(/"\$ref":"#\/definitions\/([^"]+)"/g)].map((m) => m[1]);
    for (const r of refs) assert.ok(v2.definitions[r], `dangling $ref ${r}`);
    const patch = v2.paths[`${BASE}/namespaces/{namespace}/llamas/{name}`].patch;
    assert.deepEqual(patch.consumes, ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml']);
    assert.deepEqual(patch['x-kubernetes-group-version-kind'], GVK);
    assert.ok(patch.parameters.some((p: Doc) => p.name === 'body' && p.in === 'body'));
    assert.ok(patch.parameters.some((p: Doc) => p.name === 'fieldValidation' && p.in === 'query' && p.type === 'string'));

    const etag = res.headers.etag as string;
    assert.equal(etag, `"${sha512(res.body)}"`);
    assert.equal((await a.inject({ url: '/openapi/v2', headers: { 'if-none-match': etag } })).statusCode, 304);
  });

  it('protobuf-only Accept (what kubectl sends) is 406; JSON alternatives win', async () => {
    const a = app();
    const pb = await a.inject({ url: '/openapi/v2', headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' } });
    assert.equal(pb.statusCode, 406);
    assert.equal(pb.json().reason, 'NotAcceptable');
    const both = await a.inject({ url: '/openapi/v2', headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json' } });
    assert.equal(both.statusCode, 200);
  });
});

// The real judge: kubectl 1.32 reading our discovery + OpenAPI v3 over HTTPS.
// No skip: without kubectl this fails loudly (.ci/run checks for it up front).
describe('kubectl explain against discovery + OpenAPI v3', () => {
  it('explains llama.spec recursively and a field with its description and enum', { timeout: 60_000 }, async () => {
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', algorithm: 'sha256' } as never);
    const a = Fastify({ https: { key: pems.private, cert: pems.cert } });
    installErrorHandling(a);
    registerDiscoveryRoutes(a, [llama], { standalone: true, version: { gitVersion: 'v0.1.0' } });
    registerOpenApiRoutes(a, [llama]);
    await a.listen({ port: 0, host: '127.0.0.1' });
    const home = await mkdtemp(join(tmpdir(), 'farm-explain-'));
    try {
      const { port } = a.server.address() as AddressInfo;
      const kubectl = async (...args: string[]) => (await promisify(execFile)(KUBECTL,
        [`--server=https://127.0.0.1:${port}`, '--insecure-skip-tls-verify', '--token=unused', ...args],
        { env: { ...process.env, HOME: home, KUBECONFIG: join(home, 'none') }, timeout: 30_000 })).stdout;

      const recursive = await kubectl('explain', 'llama.spec', '--recursive');
      assert.match(recursive, /KIND:\s+Llama/);
      assert.match(recursive, /VERSION:\s+v1alpha/);
      assert.match(recursive, /LlamaSpec is the desired state of a Llama/);
      for (const f of ['color\t<string>', 'favoriteFood\t<string>', 'height\t<number> -required-', 'shorn\t<boolean>', 'weight\t<number> -required-']) {
        assert.ok(recursive.includes(f), `missing ${JSON.stringify(f)} in:\n${recursive}`);
      }
      const color = await kubectl('explain', 'll.spec.color');
      assert.match(color, /ENUM:\s+white\s+brown\s+black\s+grey\s+spotted/);
      assert.match(color, /Colour of the llama's fleece/);
      const meta = await kubectl('explain', 'llamas.metadata.labels');
      assert.match(meta, /Map of string keys and values/);
    } finally {
      await a.close();
      await rm(home, { recursive: true, force: true });
    }
  });
});
