// One regression per defect class of the hardening issue, each failing on the code before it.
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { tokenAuthenticator } from '../../src/server/auth/standalone.js';
import type { Authorizer, UserInfo } from '../../src/server/auth/types.js';
import type { RequestInfo } from '../../src/endpoints/requestInfo.js';
import { buildResources } from '../../src/registry/farm/index.js';
import { startTestServer, type Response, type TestServer } from '../helpers/testServer.js';

let s: TestServer;
const ns = '/apis/farm.example.com/v1alpha/namespaces/harden';
const coll = `${ns}/llamas`;
const llama = (name: string, extra: Record<string, unknown> = {}) =>
  ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 80, height: 1.2 }, ...extra });

before(async () => { s = await startTestServer(); });
after(async () => { await s.close(); });

function expectStatus(r: Response, code: number, reason?: string, message?: RegExp): void {
  assert.equal(r.status, code, r.body.slice(0, 500));
  const st = r.json<{ kind: string; code: number; reason?: string; message: string }>();
  assert.equal(st.kind, 'Status');
  assert.equal(st.code, code);
  if (reason) assert.equal(st.reason, reason);
  if (message) assert.match(st.message, message);
}

/** A request whose raw header list we keep (Node joins repeated headers in `headers`). */
function rawRequest(method: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<{ status: number; rawHeaders: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${s.url}${path}`, { method, ca: s.caPem, headers: { authorization: `Bearer ${s.token}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const nested = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);

describe('1. memory amplification', () => {
  it('a JSON patch whose copies double a subtree stops at 3 MiB with a 422, and the llama is unchanged', async () => {
    assert.equal((await s.request('POST', coll, { body: llama('copycat') })).status, 201);
    const before = (await s.request('GET', `${coll}/copycat`)).body;
    const ops: unknown[] = [{ op: 'add', path: '/spec/x', value: ['0123456789'.repeat(10)] }];
    for (let i = 0; i < 40; i++) ops.push({ op: 'copy', from: '/spec/x', path: '/spec/x/-' }, { op: 'copy', from: '/spec/x', path: '/spec/x/-' });
    const r = await s.request('PATCH', `${coll}/copycat`, { body: ops, contentType: 'application/json-patch+json' });
    expectStatus(r, 422, 'Invalid', /the server rejected our request due to an error in our request/);
    assert.match(r.body, /Unable to complete the copy, the accumulated size increase of copy is \d+, exceeding the limit 3145728/);
    assert.equal((await s.request('GET', `${coll}/copycat`)).body, before);
  });

  it('patches cannot grow a llama past 3 MiB of JSON: 413, and the stored llama stays as it was', async () => {
    const finalizers = Array.from({ length: 200_000 }, (_, i) => `x/${i}`);
    assert.equal((await s.request('POST', coll, { body: llama('grower', { metadata: { name: 'grower', finalizers } }) })).status, 201);
    const before = (await s.request('GET', `${coll}/grower`)).body;
    const labels = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, 'v'.repeat(20)]));
    expectStatus(await s.request('PATCH', `${coll}/grower`, { body: { metadata: { labels } }, contentType: 'application/merge-patch+json' }),
      413, 'RequestEntityTooLarge', /limit is 3145728/);
    assert.equal((await s.request('GET', `${coll}/grower`)).body, before);
  });

  it('a YAML alias bomb is refused with 400, not expanded', async () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) levels.push(`${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]`);
    const r = await s.request('POST', coll, { body: `${levels.join('\n')}\nmetadata: {name: bomb}\n`, contentType: 'application/yaml' });
    expectStatus(r, 400, 'BadRequest', /excessive aliasing/);
  });
});

describe('2. nothing fails after a commit', () => {
  it('unknown fields named beyond Latin-1 answer 201 with one Warning header each (UTF-8), and the llama is stored once', async () => {
    const body = JSON.stringify({ ...llama('unicode-warn'), spec: { weight: 1, height: 1, 'größe': 1, '体重': 2, '🦙': 3 } });
    const r = await rawRequest('POST', coll, body, { 'content-type': 'application/json' });
    assert.equal(r.status, 201, r.body);
    const warnings: string[] = [];
    for (let i = 0; i < r.rawHeaders.length; i += 2) if (r.rawHeaders[i].toLowerCase() === 'warning') warnings.push(Buffer.from(r.rawHeaders[i + 1], 'latin1').toString('utf8'));
    assert.deepEqual(warnings.sort(), ['299 - "unknown field \\"spec.größe\\""', '299 - "unknown field \\"spec.体重\\""', '299 - "unknown field \\"spec.🦙\\""'].sort());
    expectStatus(await s.request('POST', coll, { body: llama('unicode-warn') }), 409, 'AlreadyExists');
  });

  it('a write the client cannot read (Accept: text/html) is refused with 406 before anything is stored', async () => {
    expectStatus(await s.request('POST', coll, { body: llama('no-accept'), headers: { accept: 'text/html' } }), 406, 'NotAcceptable');
    expectStatus(await s.request('GET', `${coll}/no-accept`), 404, 'NotFound');
  });
});

describe('3. nesting depth', () => {
  it('9,999 levels below an unknown field: created with fieldValidation=Ignore, 400 unknown field with Strict', async () => {
    const body = `{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":"deep-ok"},"spec":{"weight":1,"height":1,"deep":${nested(9_996)}}}`;
    assert.equal((await s.request('POST', `${coll}?fieldValidation=Ignore`, { body })).status, 201);
    expectStatus(await s.request('POST', `${coll}?fieldValidation=Strict`, { body: body.replace('deep-ok', 'deep-strict') }), 400, 'BadRequest', /unknown field "spec.deep"/);
  });

  it('10,001 levels are a 400 "exceeded max depth" in create bodies, merge patches and json-patch values', async () => {
    const deep = nested(10_000);
    expectStatus(await s.request('POST', coll, { body: `{"metadata":{"name":"too-deep"},"x":${deep}}` }), 400, 'BadRequest', /exceeded max depth/);
    expectStatus(await s.request('PATCH', `${coll}/deep-ok`, { body: `{"spec":${deep}}`, contentType: 'application/merge-patch+json' }), 400, 'BadRequest', /exceeded max depth/);
    expectStatus(await s.request('PATCH', `${coll}/deep-ok`, { body: `[{"op":"add","path":"/spec/x","value":${deep}}]`, contentType: 'application/json-patch+json' }), 400, 'BadRequest', /exceeded max depth/);
  });

  it('a merge patch and a json patch 5,000 deep under unknown fields work (Warn) and store nothing of them', async () => {
    const v = nested(5_000);
    const m = await s.request('PATCH', `${coll}/deep-ok`, { body: `{"spec":{"weight":2,"junk":${v}}}`, contentType: 'application/merge-patch+json' });
    assert.equal(m.status, 200, m.body);
    const j = await s.request('PATCH', `${coll}/deep-ok`, { body: `[{"op":"add","path":"/spec/junk","value":${v}},{"op":"test","path":"/spec/junk","value":${v}}]`, contentType: 'application/json-patch+json' });
    assert.equal(j.status, 200, j.body);
    assert.equal(JSON.stringify(j.json().spec), '{"weight":2,"height":1,"color":"white","shorn":false}');
  });

  it('YAML nested a million levels is refused quickly with 400', async () => {
    for (const yaml of ['['.repeat(1_000_000), '- '.repeat(1_000_000) + 'x']) {
      expectStatus(await s.request('POST', coll, { body: yaml, contentType: 'application/yaml' }), 400, 'BadRequest', /maxDepth|max depth/);
    }
  });
});

describe('4. no quadratic work', () => {
  // Not a timing assertion: linear checks take about a second here, the old quadratic ones took many minutes.
  it('200,000 finalizers: create, PATCH and DELETE answer (linear checks)', { timeout: 120_000 }, async () => {
    const finalizers = Array.from({ length: 200_000 }, (_, i) => `x/${i}`);
    const created = await s.request('POST', coll, { body: llama('many-finalizers', { metadata: { name: 'many-finalizers', finalizers } }) });
    assert.equal(created.status, 201);
    assert.equal((await s.request('PATCH', `${coll}/many-finalizers`, { body: { spec: { weight: 3 } }, contentType: 'application/merge-patch+json' })).status, 200);
    const deleted = await s.request('DELETE', `${coll}/many-finalizers`);
    assert.equal(deleted.status, 200);
    assert.ok(deleted.json().metadata.deletionTimestamp);
  });
});

describe('6. resourceVersions the server never issued', () => {
  it('a watch from far above the current RV is a 504 Too large resource version (not a stream)', async () => {
    const list = (await s.request('GET', coll)).json<{ metadata: { resourceVersion: string } }>();
    const future = String(BigInt(list.metadata.resourceVersion) + 100_000n);
    const r = await s.request('GET', `${coll}?watch=true&resourceVersion=${future}`);
    expectStatus(r, 504, 'Timeout', /^Timeout: Too large resource version: \d+, current: \d+$/);
    assert.equal(r.headers['retry-after'], '1');
    assert.deepEqual(r.json().details.causes, [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }]);
  });

  it('an RV issued by an earlier process is 410 Expired in the next one (RVs start above it)', async () => {
    const rvOf = (built: ReturnType<typeof buildResources>) => built.stores.get('llamas')!.resourceVersion;
    const first = buildResources({ watchHistory: 10, garbageCollection: false });
    const a = first.stores.get('llamas')!;
    for (let i = 0; i < 5; i++) await a.create(`x/old-${i}`, llama(`old-${i}`, { metadata: { name: `old-${i}`, namespace: 'x' } }) as never);
    const oldRV = rvOf(first);
    await new Promise((r) => setTimeout(r, 2));
    const restarted = await startTestServer({ resources: buildResources({ watchHistory: 10, garbageCollection: false }).definitions });
    try {
      const w = await restarted.stream(`${coll}?watch=true&resourceVersion=${oldRV}`);
      const line = JSON.parse(await w.next()) as { type: string; object: { code: number; reason: string } };
      w.close();
      assert.deepEqual([line.type, line.object.code, line.object.reason], ['ERROR', 410, 'Expired']);
    } finally {
      await restarted.close();
    }
  });
});

describe('7. type confusion', () => {
  it('DeleteOptions of the wrong JSON types are 400 and delete nothing', async () => {
    assert.equal((await s.request('POST', coll, { body: llama('typed') })).status, 201);
    const bad: [unknown, RegExp][] = [
      [{ dryRun: 'All' }, /cannot unmarshal string into Go struct field DeleteOptions.dryRun of type \[\]string/],
      [{ preconditions: 'x' }, /cannot unmarshal string into Go struct field DeleteOptions.preconditions of type v1.Preconditions/],
      [{ preconditions: { uid: 5 } }, /DeleteOptions.preconditions.uid of type types.UID/],
      [{ gracePeriodSeconds: '5' }, /DeleteOptions.gracePeriodSeconds of type int64/],
      [{ gracePeriodSeconds: 1.5 }, /cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds of type int64/],
      [{ orphanDependents: 'true' }, /DeleteOptions.orphanDependents of type bool/],
      [{ propagationPolicy: 3 }, /DeleteOptions.propagationPolicy of type v1.DeletionPropagation/],
      [{ dryRun: [1] }, /DeleteOptions.dryRun of type string/],
      [[], /cannot unmarshal array into Go value of type v1.DeleteOptions/],
    ];
    for (const [body, message] of bad) expectStatus(await s.request('DELETE', `${coll}/typed`, { body }), 400, 'BadRequest', message);
    assert.equal((await s.request('GET', `${coll}/typed`)).status, 200);
  });

  it('watch=maybe is a watch (kube converts any value but 0/false to true); a negative timeoutSeconds ends it at once', async () => {
    const r = await s.request('GET', `${coll}?watch=maybe&timeoutSeconds=-5`);
    assert.equal(r.status, 200);
    assert.ok(r.body.split('\n').filter(Boolean).every((l) => (JSON.parse(l) as { type: string }).type === 'ADDED'), r.body.slice(0, 200));
  });

  it('list options: continue with resourceVersion, int64 overflow and unparsable GET resourceVersion are 400', async () => {
    const page = (await s.request('GET', `${coll}?limit=1`)).json<{ metadata: { continue: string; resourceVersion: string } }>();
    expectStatus(await s.request('GET', `${coll}?limit=1&continue=${page.metadata.continue}&resourceVersion=${page.metadata.resourceVersion}`), 400, 'BadRequest', /specifying resource version is not allowed when using continue/);
    expectStatus(await s.request('GET', `${coll}?limit=9223372036854775808`), 400, 'BadRequest');
    expectStatus(await s.request('GET', `${coll}/typed?resourceVersion=abc`), 400, 'BadRequest', /invalid resource version/);
  });

  it('duplicate JSON keys: 400 with Strict, a Warning with Warn, stored last-wins', async () => {
    const body = '{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{"name":"dup","name":"dup"},"spec":{"weight":1,"height":1,"weight":2}}';
    expectStatus(await s.request('POST', `${coll}?fieldValidation=Strict`, { body }), 400, 'BadRequest', /strict decoding error: duplicate field "metadata.name", duplicate field "spec.weight"/);
    const r = await s.request('POST', `${coll}?fieldValidation=Warn`, { body });
    assert.equal(r.status, 201);
    assert.equal(r.headers.warning, '299 - "duplicate field \\"metadata.name\\"", 299 - "duplicate field \\"spec.weight\\""');
    assert.equal(r.json().spec.weight, 2);
  });
});

describe('8. HTTP-level answers', () => {
  /** Sends the bytes on one TLS connection (without half-closing it) and returns everything the server wrote. */
  const rawWire = (bytes: string): Promise<string> => new Promise((resolve, reject) => {
    const { port } = new URL(s.url);
    const sock = tlsConnect({ host: '127.0.0.1', port: Number(port), ca: s.caPem, servername: 'localhost' }, () => sock.write(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => { sock.destroy(); reject(new Error('the server did not close the connection')); }, 10_000);
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', () => undefined);
    sock.on('close', () => { clearTimeout(timer); resolve(Buffer.concat(chunks).toString('utf8')); });
  });

  it('a malformed request pipelined after a DELETE is answered after the DELETE\'s 200, not instead of it', async () => {
    assert.equal((await s.request('POST', coll, { body: llama('piped') })).status, 201);
    const wire = await rawWire(`DELETE ${coll}/piped HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\nFOO{ / HTTP/1.1\r\nHost: x\r\n\r\n`);
    const statuses = [...wire.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
    assert.equal(statuses[0], 200, wire.slice(0, 300));
    assert.ok(statuses.length === 1 || statuses[1] >= 400, wire.slice(0, 600));
    expectStatus(await s.request('GET', `${coll}/piped`), 404, 'NotFound');
  });

  it('an Expect other than 100-continue is a 417 Status', async () => {
    const wire = await rawWire(`POST ${coll} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`);
    assert.match(wire, /^HTTP\/1\.1 417/);
    const body = JSON.parse(wire.slice(wire.indexOf('\r\n\r\n') + 4)) as { kind: string; code: number };
    assert.deepEqual([body.kind, body.code], ['Status', 417]);
  });

  it('an unserved method on a served path is 405; an unknown health check is a 404 Status', async () => {
    expectStatus(await s.request('OPTIONS', coll), 405, 'MethodNotAllowed');
    expectStatus(await s.request('GET', '/livez/nope'), 404, 'NotFound');
  });
});

describe('10. client compatibility', () => {
  it('a body without Content-Type is JSON (the Python client sends none); text/plain and a patch type on POST are 415', async () => {
    const r = await rawRequest('POST', coll, JSON.stringify(llama('no-type')), {});
    assert.equal(r.status, 201, r.body);
    expectStatus(await s.request('POST', coll, { body: JSON.stringify(llama('plain')), contentType: 'text/plain' }), 415, 'UnsupportedMediaType');
    expectStatus(await s.request('POST', coll, { body: llama('patchy'), contentType: 'application/merge-patch+json' }), 415, 'UnsupportedMediaType');
    expectStatus(await s.request('PUT', `${coll}/no-type`, { body: llama('no-type'), contentType: 'application/json-patch+json' }), 415, 'UnsupportedMediaType');
  });

  it('Impersonate-* headers are authorized as "impersonate" and then the request runs as that user; a denied one is 403', async () => {
    const seen: { user: UserInfo; info: RequestInfo }[] = [];
    const authorizer: Authorizer = {
      async authorize(user, info) {
        seen.push({ user, info });
        return info.verb === 'impersonate' && info.name === 'eve' ? { allowed: false, reason: 'eve is off limits' } : { allowed: true };
      },
    };
    const base = await startTestServer();
    const t = await startTestServer({ auth: { authenticators: [tokenAuthenticator(base.token)], rejectAnonymous: true, authorizer } });
    const token = base.token;
    await base.close();
    try {
      const created = await t.request('POST', coll, { body: llama('as-bob'), token, headers: { 'impersonate-user': 'bob', 'impersonate-group': 'farmers', 'impersonate-extra-scopes': 'wool' } });
      assert.equal(created.status, 201, created.body);
      const checks = seen.filter((x) => x.info.verb === 'impersonate').map((x) => [x.info.resource, x.info.subresource, x.info.name, x.info.apiGroup]);
      assert.deepEqual(checks, [['users', '', 'bob', ''], ['groups', '', 'farmers', ''], ['userextras', 'scopes', 'wool', 'authentication.k8s.io']]);
      const create = seen.find((x) => x.info.verb === 'create')!;
      assert.deepEqual(create.user, { username: 'bob', groups: ['farmers', 'system:authenticated'], extra: { scopes: ['wool'] } });
      const sa = seen.length;
      assert.equal((await t.request('GET', coll, { token, headers: { 'impersonate-user': 'system:serviceaccount:farm:robot' } })).status, 200);
      assert.deepEqual(seen[sa].info.resource, 'serviceaccounts');
      assert.deepEqual(seen[sa + 1].user.groups, ['system:serviceaccounts', 'system:serviceaccounts:farm', 'system:authenticated']);
      // Header bytes are UTF-8, as Go reads them (Node would hand them over as Latin-1 characters).
      const before = seen.length;
      await t.request('GET', coll, { token, headers: { 'impersonate-user': Buffer.from('bjørn', 'utf8').toString('latin1') } });
      assert.equal(seen[before].info.name, 'bjørn');
      // serviceaccount.SplitUsername: an invalid namespace or name is a plain user, not a service account.
      const bad = seen.length;
      await t.request('GET', coll, { token, headers: { 'impersonate-user': 'system:serviceaccount:Bad_NS:sa' } });
      assert.deepEqual([seen[bad].info.resource, seen[bad].info.name], ['users', 'system:serviceaccount:Bad_NS:sa']);
      assert.deepEqual(seen[bad + 1].user.groups, ['system:authenticated']);
      expectStatus(await t.request('GET', coll, { token, headers: { 'impersonate-user': 'eve' } }), 403, 'Forbidden',
        /^users "eve" is forbidden: User "farm-admin" cannot impersonate resource "users" in API group "" at the cluster scope: eve is off limits$/);
      expectStatus(await t.request('GET', coll, { token, headers: { 'impersonate-group': 'farmers' } }), 400, 'BadRequest', /without impersonating a user/);
    } finally {
      await t.close();
    }
  });
});
