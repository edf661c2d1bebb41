// Whatever a client sends: a Status error (never 5xx, never a crash), and nothing changes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let s: TestServer;
const coll = '/apis/farm.example.com/v1alpha/namespaces/hostile/llamas';
const item = `${coll}/dolly`;
const valid = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'dolly' }, spec: { weight: 100, height: 1.5 } };

before(async () => {
  s = await startTestServer();
  assert.equal((await s.request('POST', coll, { body: valid })).status, 201);
});
after(async () => { await s.close(); });

const bodies: [string, string][] = [
  ['application/json', ''], ['application/json', '{'], ['application/json', 'null'], ['application/json', '[]'], ['application/json', '42'],
  ['application/json', '"str"'], ['application/json', '{"__proto__":{"polluted":true}}'], ['application/json', '{"constructor":{"prototype":{"x":1}}}'],
  ['application/json', '{"metadata":"x"}'], ['application/json', '{"metadata":{"name":{"a":1}}}'], ['application/json', '{"metadata":{"labels":[1,2]}}'],
  ['application/json', '{"metadata":{"name":"dolly","labels":{"a":5}},"spec":{"weight":"heavy"}}'], ['application/json', '{"spec":[]}'],
  ['application/json', `{"metadata":{"name":"${'x'.repeat(300)}"}}`],
  ['application/json', '{"metadata":{"generateName":5},"spec":{"weight":1,"height":1}}'], ['application/json', '{"metadata":{"name":"dolly","finalizers":"x"}}'],
  ['application/json', '{"metadata":{"name":"dolly","ownerReferences":{"a":1}}}'], ['application/json', '{"metadata":{"name":7}}'],
  ['application/merge-patch+json', '{"metadata":{"finalizers":"x"}}'], ['application/merge-patch+json', '{"metadata":{"ownerReferences":[5]}}'], ['application/json', '\u0000\u0001'], ['application/json', '{"a":1e999}'],
  ['application/yaml', 'a: [1, 2'], ['application/yaml', '*unknown'], ['application/yaml', 'a: &x [*x]'], ['application/yaml', '- 1\n- 2'],
  ['text/plain', 'hello'], ['application/xml', '<llama/>'], ['application/merge-patch+json', '{"spec":null}'], ['application/json-patch+json', '[{"op":"move","from":"/spec","path":"/spec/x"}]'],
  ['application/json-patch+json', '[{"op":"add","path":"/metadata/labels/a~1b","value":{}}]'], ['application/json-patch+json', '{"op":"add"}'],
  ['application/strategic-merge-patch+json', '{}'], ['application/apply-patch+yaml', 'spec: {}'],
];
const paths = [coll, item, `${coll}/`, `${item}/status`, `${coll}?limit=abc`, `${coll}?timeoutSeconds=-5&watch=maybe`, `${coll}?labelSelector=${encodeURIComponent('a in (')}`,
  `${coll}?fieldSelector=${encodeURIComponent('metadata.name=\\')}`, `${coll}?continue=%00%01`, `${coll}?resourceVersion=-1`, `${coll}?resourceVersion=99999999999999999999`,
  `${coll}?dryRun=All&dryRun=Nope`, `${coll}?fieldValidation=Loud`, `${item}?propagationPolicy=Sideways`, '/apis/farm.example.com/v1alpha/namespaces/%2e%2e/llamas',
  `/apis/farm.example.com/v1alpha/namespaces/${'n'.repeat(400)}/llamas`, '/apis/farm.example.com/v1alpha/namespaces/hostile/llamas/%ZZ', '/apis/%00', '/openapi/v3/apis/x/y?hash=z'];

test('no request of a hostile matrix gets a 5xx or a non-Status error, and the stored llama never changes', async () => {
  const before = (await s.request('GET', item)).body;
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  let checked = 0;
  for (const path of paths) {
    for (const method of methods) {
      for (const [contentType, body] of method === 'GET' ? [['application/json', undefined] as const] : bodies) {
        // DELETE would legitimately delete; the DELETE cases run with dryRun so the object stays.
        const p = method === 'DELETE' ? `${path}${path.includes('?') ? '&' : '?'}dryRun=All` : path;
        const r = await s.request(method, p, body === undefined ? {} : { body, contentType });
        checked++;
        assert.ok(r.status < 500, `${method} ${p} [${contentType}] ${JSON.stringify(body)} → ${r.status} ${r.body.slice(0, 200)}`);
        if (r.status >= 400) {
          const st = JSON.parse(r.body) as { kind: string; code: number; reason: string };
          assert.equal(st.kind, 'Status', `${method} ${p}: ${r.body.slice(0, 200)}`);
          assert.equal(st.code, r.status);
        }
      }
    }
  }
  assert.ok(checked > 2000);
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'prototype polluted');
  const after = (await s.request('GET', item)).body;
  assert.equal(after, before, 'a rejected request changed the stored llama');
});
