// Regressions for findings of a code review: watch leaks, timeoutSeconds edge cases, empty path segments.
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { after, before, test } from 'node:test';
import type { Authorizer } from '../../src/server/auth/types.js';
import { allowAll } from '../../src/server/auth/standalone.js';
import { requestInfo } from '../../src/endpoints/requestInfo.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import type { Tracing } from '../../src/server/observability/tracing.js';

let s: TestServer;
/** An authorizer as slow as a SubjectAccessReview round trip. */
const slowAuthorizer: Authorizer = {
  async authorize(user, info, req) {
    await new Promise((r) => setTimeout(r, 300));
    return allowAll.authorize(user, info, req);
  },
};
const base = '/apis/farm.example.com/v1alpha';

before(async () => { s = await startTestServer(); });
after(async () => { await s.close(); });

test('a watch whose client left while authorization was pending subscribes nothing', async () => {
  const t = await startTestServer({ auth: { authenticators: [], rejectAnonymous: false, authorizer: slowAuthorizer } });
  try {
    for (let i = 0; i < 10; i++) {
      const req = httpsRequest(`${t.url}${base}/namespaces/leak/llamas?watch=true`, { ca: t.caPem });
      req.on('error', () => {});
      req.end();
      setTimeout(() => req.destroy(), 100);
    }
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(t.server.watchers.size, 0, 'watchers left registered after their clients disconnected');
  } finally {
    await t.close();
  }
});

// get.go: 0 takes the default (30-60 min); a negative value is context.WithTimeout already expired and
// time.NewTimer(negative) in the watch server fires at once, so the watch ends at once.
test('timeoutSeconds=0 means the default, not an immediate end; a negative value ends the watch at once', async () => {
  for (const [v, endsAtOnce] of [['0', false], ['-1', true]] as const) {
    const w = await s.stream(`${base}/namespaces/t/llamas?watch=true&timeoutSeconds=${v}`);
    assert.equal(w.status, 200);
    const ended = await Promise.race([w.ended.then(() => true), new Promise((r) => setTimeout(() => r(false), 500))]);
    assert.equal(ended, endsAtOnce, `timeoutSeconds=${v}`);
    w.close();
  }
});

test('an empty namespace segment is 404, never a list across all namespaces', async () => {
  const body = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'x' }, spec: { weight: 1, height: 1 } };
  assert.equal((await s.request('POST', `${base}/namespaces/a/llamas`, { body })).status, 201);
  for (const path of [`${base}/namespaces//llamas`, `${base}/namespaces//llamas?watch=true`, `${base}/namespaces/a/llamas/`]) {
    const r = await s.request('GET', path);
    assert.equal(r.status, 404, `${path}: ${r.body.slice(0, 200)}`);
  }
});

test('authorization sees the decoded path and keeps empty segments, as upstream splitPath', () => {
  const i = requestInfo('GET', `${base}/namespaces/d%65fault/llamas`);
  assert.equal(i.namespace, 'default');
  const e = requestInfo('GET', `${base}/namespaces//llamas`);
  assert.equal(e.resource, 'llamas');
  assert.equal(e.namespace, '');
});

const llama = (name: string, spec: Record<string, unknown> = { weight: 1, height: 1 }) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec });

test('invalid client-sent managedFields are replaced by the field manager\'s own, so no garbage reaches typed clients', async () => {
  const body = { ...llama('mf'), metadata: { name: 'mf', managedFields: [{ manager: 'x', time: 'garbage' }] } };
  const r = await s.request('POST', `${base}/namespaces/mf/llamas?fieldManager=creator`, { body });
  assert.equal(r.status, 201, r.body);
  const entries = r.json().metadata.managedFields as Array<Record<string, unknown>>;
  assert.deepEqual(entries.map((e) => [e.manager, e.operation, e.fieldsType]), [['creator', 'Update', 'FieldsV1']]);
  assert.match(String(entries[0].time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('generation counts real spec changes only: defaults, pruned unknown fields and no-op patches do not bump it', async () => {
  const path = `${base}/namespaces/gen/llamas`;
  assert.equal((await s.request('POST', path, { body: llama('g') })).status, 201);
  const cur = (await s.request('GET', `${path}/g`)).json();
  assert.equal(cur.metadata.generation, 1);
  const put = await s.request('PUT', `${path}/g`, { body: { ...llama('g'), metadata: { name: 'g', resourceVersion: cur.metadata.resourceVersion } } });
  assert.equal(put.json().metadata.generation, 1, 'a PUT without the defaulted fields changed generation');
  const ignored = await s.request('PATCH', `${path}/g?fieldValidation=Ignore`, { body: { spec: { bogus: 2 } }, contentType: 'application/merge-patch+json' });
  assert.equal(ignored.status, 200, ignored.body);
  assert.equal(ignored.json().metadata.generation, 1);
  assert.equal(ignored.json().metadata.resourceVersion, put.json().metadata.resourceVersion, 'a patch that changes nothing stored wrote anyway');
  const real = await s.request('PATCH', `${path}/g`, { body: { spec: { weight: 2 } }, contentType: 'application/merge-patch+json' });
  assert.equal(real.json().metadata.generation, 2);
});

test('malformed metadata is a 400 decoding error, an invalid namespace or finalizer pair a 422', async () => {
  const bad = await s.request('POST', `${base}/namespaces/m/llamas`, { body: { ...llama('x'), metadata: { generateName: 5 } } });
  assert.equal(bad.status, 400, bad.body);
  assert.match(bad.json().message, /cannot unmarshal number into Go struct field ObjectMeta\.metadata\.generateName of type string/);
  const ns = await s.request('POST', `${base}/namespaces/Bad_NS/llamas`, { body: llama('x') });
  assert.equal(ns.status, 422, ns.body);
  assert.match(ns.json().message, /metadata\.namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label/);
  const both = await s.request('POST', `${base}/namespaces/m/llamas`, { body: { ...llama('x'), metadata: { name: 'x', finalizers: ['orphan', 'foregroundDeletion'] } } });
  assert.equal(both.status, 422, both.body);
});

test('a generated name that is taken is drawn again, up to 8 times; then 409 AlreadyExists (store.go createWithGenerateNameRetry)', async () => {
  // A generator that repeats each name a set number of times makes collisions certain.
  const drawn: string[] = [];
  let plan: string[] = [];
  const t = await startTestServer({ generateName: (prefix) => { const n = `${prefix}${plan.shift() ?? 'zzzzz'}`; drawn.push(n); return n; } });
  try {
    const coll = `${base}/namespaces/gen/llamas`;
    const body = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { generateName: 'cria-' }, spec: { weight: 20, height: 0.8 } };
    plan = ['aaaaa'];
    assert.equal((await t.request('POST', coll, { body })).status, 201);
    plan = Array(7).fill('aaaaa').concat('bbbbb');
    const second = await t.request('POST', coll, { body });
    assert.equal(second.status, 201, second.body);
    assert.equal(second.json().metadata.name, 'cria-bbbbb', 'the 8th draw, after 7 taken ones');
    drawn.length = 0;
    plan = Array(9).fill('aaaaa');
    const third = await t.request('POST', coll, { body });
    assert.equal(third.status, 409, third.body);
    assert.equal(third.json().reason, 'AlreadyExists');
    assert.equal(drawn.length, 8, 'eight attempts, no more');
    plan = ['ccccc'];
    const named = await t.request('POST', coll, { body: { ...body, metadata: { name: 'cria-aaaaa', generateName: 'cria-' } } });
    assert.equal(named.status, 409, 'an explicit name is never redrawn');
  } finally { await t.close(); }
});

test('a watch parses its selectors before includeObject (get.go: the watch opens, then the transform is chosen); no watcher is left behind', async () => {
  const before = s.server.watchers.size;
  const r = await s.request('GET', `${base}/namespaces/a/llamas?watch=true&fieldSelector=spec.weight%3D1&includeObject=bogus`);
  assert.equal(r.status, 400, r.body);
  assert.match(r.json<{ message: string }>().message, /field label not supported: spec\.weight/);
  const bad = await s.request('GET', `${base}/namespaces/a/llamas?watch=true&includeObject=bogus`);
  assert.equal(bad.status, 400, bad.body);
  assert.match(bad.json<{ message: string }>().message, /includeObject=bogus is not supported/);
  assert.equal(s.server.watchers.size, before);
});

test('a throw between authentication and authorization is a 500 Status, not a request left hanging', async () => {
  const failing: Tracing = {
    config: { endpoint: 'localhost:4317' },
    wrap: (handler) => handler,
    enter: () => { throw new Error('tracer broke'); },
    flush: async () => {},
    shutdown: async () => {},
  };
  const s = await startTestServer({ tracing: failing });
  try {
    const res = await s.request('GET', '/apis/farm.example.com/v1alpha/namespaces/default/llamas');
    assert.equal(res.status, 500);
    assert.equal(res.json<{ reason: string }>().reason, 'InternalError');
    assert.match(res.json<{ message: string }>().message, /tracer broke/);
  } finally {
    await s.close();
  }
});
