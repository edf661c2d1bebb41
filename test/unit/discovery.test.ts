import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { z } from 'zod';
import { compareKubeAwareVersions, storageVersionHash } from '../../src/endpoints/discovery/documents.js';
import { AGGREGATED_V2_CONTENT_TYPE } from '../../src/endpoints/mediaTypes.js';
import { negotiateDiscovery, registerDiscoveryRoutes } from '../../src/endpoints/discovery/routes.js';
import { installErrorHandling } from '../../src/endpoints/http.js';
import type { ResourceDefinition } from '../../src/registry/resource.js';
import { kindSchema } from '../../src/apimachinery/schema/kind.js';
import { llamaShape, readOnlyProvider, writableProvider } from '../helpers/providers.js';

const writable = writableProvider;
const readOnly = readOnlyProvider;

const llama = llamaShape();
// A read-only resource in the same group-version, like FarmPods.
const barn: ResourceDefinition = {
  group: 'farm.example.com', version: 'v1alpha', kind: 'Barn', plural: 'barns', singular: 'barn',
  shortNames: [], categories: ['farm'], namespaced: false, description: 'Barn is a test-only read-only resource.',
  schema: kindSchema({ group: 'farm.example.com', version: 'v1alpha', kind: 'Barn', description: 'Barn.', spec: z.object({}).describe('Nothing.') }),
  columns: [], rest: readOnly,
};
const defs = [llama, barn];

const AGG_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

function app(standalone = true) {
  const a = Fastify();
  installErrorHandling(a);
  registerDiscoveryRoutes(a, defs, { standalone, version: { gitVersion: 'v0.1.0' } });
  return a;
}

const sha512 = (s: string) => createHash('sha512').update(s).digest('hex').toUpperCase();

describe('storageVersionHash', () => {
  it('is base64 of the first 8 bytes of sha256("group/version/Kind") — the contract example', () => {
    assert.equal(storageVersionHash('farm.example.com', 'v1alpha', 'Llama'), 'itFfSLuhV0Q=');
  });
});

describe('kube-aware version order', () => {
  it('prefers GA over beta over alpha, higher numbers first', () => {
    const vs = ['v1alpha1', 'v2', 'v1beta2', 'foo', 'v1', 'v1beta1', 'v10'];
    vs.sort((a, b) => compareKubeAwareVersions(b, a));
    assert.deepEqual(vs, ['v10', 'v2', 'v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo']);
  });
});

describe('Accept negotiation for /apis', () => {
  it('follows the client order and q values', () => {
    assert.equal(negotiateDiscovery(AGG_ACCEPT, true), 'v2');
    assert.equal(negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json', true), 'v2beta1');
    assert.equal(negotiateDiscovery('application/json;q=0.9,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', true), 'v2');
    assert.equal(negotiateDiscovery('application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5', true), 'legacy');
    assert.equal(negotiateDiscovery(undefined, true), 'legacy');
    assert.equal(negotiateDiscovery('*/*', true), 'legacy');
    assert.equal(negotiateDiscovery('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', true), 'legacy');
    assert.equal(negotiateDiscovery('application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList', true), undefined);
    assert.equal(negotiateDiscovery('application/vnd.kubernetes.protobuf', true), undefined);
    assert.equal(negotiateDiscovery(AGG_ACCEPT.split(',').slice(0, 2).join(','), false), undefined);
  });
});

describe('legacy discovery bodies', () => {
  it('GET /apis is an APIGroupList', async () => {
    const res = await app().inject({ url: '/apis', headers: { accept: 'application/json, */*' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.headers.vary, 'Accept');
    assert.deepEqual(res.json(), {
      kind: 'APIGroupList', apiVersion: 'v1',
      groups: [{
        name: 'farm.example.com',
        versions: [{ groupVersion: 'farm.example.com/v1alpha', version: 'v1alpha' }],
        preferredVersion: { groupVersion: 'farm.example.com/v1alpha', version: 'v1alpha' },
      }],
    });
  });

  it('GET /apis/<group> is an APIGroup', async () => {
    const res = await app().inject({ url: '/apis/farm.example.com' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      kind: 'APIGroup', apiVersion: 'v1', name: 'farm.example.com',
      versions: [{ groupVersion: 'farm.example.com/v1alpha', version: 'v1alpha' }],
      preferredVersion: { groupVersion: 'farm.example.com/v1alpha', version: 'v1alpha' },
    });
  });

  it('GET /apis/<group>/<version> is an APIResourceList with verbs from the provider', async () => {
    const res = await app().inject({ url: '/apis/farm.example.com/v1alpha?timeout=32s', headers: { accept: 'application/json, */*' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.json(), {
      kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'farm.example.com/v1alpha',
      resources: [
        {
          name: 'llamas', singularName: 'llama', namespaced: true, kind: 'Llama',
          verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
          shortNames: ['ll'], categories: ['farm'], storageVersionHash: 'itFfSLuhV0Q=',
        },
        // The status subresource, as kube-apiserver lists a CRD's (no singular name, hash or short names).
        { name: 'llamas/status', singularName: '', namespaced: true, kind: 'Llama', verbs: ['get', 'patch', 'update'] },
        {
          name: 'barns', singularName: 'barn', namespaced: false, kind: 'Barn', verbs: ['get', 'list', 'watch'],
          categories: ['farm'], storageVersionHash: storageVersionHash('farm.example.com', 'v1alpha', 'Barn'),
        },
      ],
    });
  });

  it('the availability check (no Accept header) gets 200', async () => {
    const res = await app().inject({ url: '/apis/farm.example.com/v1alpha' });
    assert.equal(res.statusCode, 200);
  });

  it('unknown groups and versions are 404 Status', async () => {
    for (const url of ['/apis/nope.example.com', '/apis/farm.example.com/v9', '/apis/nope.example.com/v1']) {
      const res = await app().inject({ url });
      assert.equal(res.statusCode, 404, url);
      assert.deepEqual(res.json(), {
        kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
        message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404,
      });
    }
  });

  it('nothing acceptable is a 406 Status', async () => {
    const res = await app().inject({ url: '/apis', headers: { accept: 'application/vnd.kubernetes.protobuf' } });
    assert.equal(res.statusCode, 406);
    assert.equal(res.json().kind, 'Status');
    assert.equal(res.json().reason, 'NotAcceptable');
  });
});

describe('aggregated discovery', () => {
  it('answers kubectl\'s Accept with APIGroupDiscoveryList v2 and the exact content type', async () => {
    const res = await app().inject({ url: '/apis?timeout=32s', headers: { accept: AGG_ACCEPT } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], AGGREGATED_V2_CONTENT_TYPE);
    assert.equal(res.headers.vary, 'Accept');
    assert.equal(res.headers['cache-control'], 'public');
    assert.equal(res.headers.etag, `"${sha512(res.body)}"`);
    assert.deepEqual(res.json(), {
      kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {},
      items: [{
        metadata: { name: 'farm.example.com' },
        versions: [{
          version: 'v1alpha',
          resources: [
            {
              resource: 'llamas', responseKind: { group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' },
              scope: 'Namespaced', singularResource: 'llama',
              verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
              shortNames: ['ll'], categories: ['farm'],
              subresources: [{ subresource: 'status', responseKind: { group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' }, verbs: ['get', 'patch', 'update'] }],
            },
            {
              resource: 'barns', responseKind: { group: 'farm.example.com', version: 'v1alpha', kind: 'Barn' },
              scope: 'Cluster', singularResource: 'barn', verbs: ['get', 'list', 'watch'], categories: ['farm'],
            },
          ],
          freshness: 'Current',
        }],
      }],
    });
  });

  it('serves v2beta1 when that is what is asked', async () => {
    const res = await app().inject({ url: '/apis', headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList');
    assert.equal(res.json().apiVersion, 'apidiscovery.k8s.io/v2beta1');
  });

  it('304 when If-None-Match carries the ETag', async () => {
    const a = app();
    const first = await a.inject({ url: '/apis', headers: { accept: AGG_ACCEPT } });
    const etag = first.headers.etag as string;
    const second = await a.inject({ url: '/apis', headers: { accept: AGG_ACCEPT, 'if-none-match': etag } });
    assert.equal(second.statusCode, 304);
    assert.equal(second.body, '');
    assert.equal(second.headers.etag, etag);
    const stale = await a.inject({ url: '/apis', headers: { accept: AGG_ACCEPT, 'if-none-match': '"0000"' } });
    assert.equal(stale.statusCode, 200);
  });
});

describe('standalone extras', () => {
  it('GET /api lists core v1 with the implicit namespaces (legacy and aggregated), as clients that walk discovery need', async () => {
    const a = app(true);
    const legacy = await a.inject({ url: '/api', headers: { host: '127.0.0.1:8443' } });
    assert.equal(legacy.statusCode, 200);
    assert.deepEqual(legacy.json(), {
      kind: 'APIVersions', versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:8443' }],
    });
    const v1 = await a.inject({ url: '/api/v1' });
    assert.equal(v1.statusCode, 200);
    assert.deepEqual(v1.json(), { kind: 'APIResourceList', groupVersion: 'v1',
      resources: [{ name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['get'] }] });
    const agg = await a.inject({ url: '/api', headers: { accept: AGG_ACCEPT } });
    assert.equal(agg.headers['content-type'], AGGREGATED_V2_CONTENT_TYPE);
    assert.deepEqual(agg.json(), { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{
      metadata: { name: '' },
      versions: [{ version: 'v1', freshness: 'Current', resources: [
        { resource: 'namespaces', responseKind: { group: '', version: 'v1', kind: 'Namespace' }, scope: 'Cluster', singularResource: 'namespace', verbs: ['get'] }] }],
    }] });
  });

  it('GET /version has version.Info\'s shape', async () => {
    const res = await app(true).inject({ url: '/version' });
    assert.equal(res.statusCode, 200);
    const v = res.json();
    assert.deepEqual(Object.keys(v).sort(), ['buildDate', 'compiler', 'gitCommit', 'gitTreeState', 'gitVersion', 'goVersion', 'major', 'minor', 'platform']);
    assert.equal(v.gitVersion, 'v0.1.0');
    assert.equal(v.major, '0');
    assert.equal(v.minor, '1');
    assert.match(v.platform, /^[a-z0-9]+\/[a-z0-9]+$/);
  });

  it('cluster mode does not serve /api', async () => {
    const res = await app(false).inject({ url: '/api' });
    assert.equal(res.statusCode, 404);
  });
});
