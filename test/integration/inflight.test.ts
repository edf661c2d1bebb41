// --max-requests-inflight / --max-mutating-requests-inflight over real HTTPS, as kube's
// WithMaxInFlightLimit: requests past a limit get 429 with Retry-After: 1 and a TooManyRequests
// Status; read-only and mutating seats are separate; watches, health probes and system:masters are
// never refused. Requests are held in flight the honest way: LISTs of ~20 MB whose clients stop
// reading (the server writes them as the connection takes them), and creates whose bodies are
// still being uploaded.
import assert from 'node:assert/strict';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import type { Authorizer, UserInfo } from '../../src/server/auth/types.js';
import { InFlightLimiter } from '../../src/server/filters/inFlightLimiter.js';
import { startTestServer, tokenUsers, type TestServer } from '../helpers/testServer.js';

const NS = '/apis/farm.example.com/v1alpha/namespaces/default/llamas';
const LOADER = 'loader-token-0c9e7d';
const loader: UserInfo = { username: 'loader', groups: ['system:authenticated'], extra: {} };
const admin: UserInfo = { username: 'admin', groups: ['system:masters', 'system:authenticated'], extra: {} };


interface Held { req: ClientRequest; res?: IncomingMessage; release(): void }

/** A LIST whose client reads nothing once the headers are in: the server stays mid-response. */
function stalledList(s: TestServer): Promise<Held> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${s.url}${NS}`, { headers: { authorization: `Bearer ${LOADER}` }, ca: s.caPem, agent: false }, (res) => {
      res.pause();
      resolve({ req, res, release: () => req.destroy() });
    });
    req.on('error', (e) => { if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e); });
    req.end();
  });
}

/** A create whose body is still on its way: 20 of its 200 bytes sent. */
function uploadingCreate(s: TestServer): Held {
  const req = httpsRequest(`${s.url}${NS}`, {
    method: 'POST', ca: s.caPem, agent: false,
    headers: { authorization: `Bearer ${LOADER}`, 'content-type': 'application/json', 'content-length': '200' },
  });
  req.on('error', () => {});
  req.write('{"metadata": {"name"');
  return { req, release: () => req.destroy() };
}

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const llama = (name: string, annotations: Record<string, string> = {}) =>
  ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, annotations }, spec: { weight: 1, height: 1 } });

function assertTooMany(r: { status: number; headers: Record<string, string | string[] | undefined>; json<T>(): T }): void {
  assert.equal(r.status, 429);
  assert.equal(r.headers['retry-after'], '1');
  assert.deepEqual(r.json(), {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message: 'Too many requests, please try again later.', reason: 'TooManyRequests', details: { retryAfterSeconds: 1 }, code: 429,
  });
}

describe('in-flight limits', () => {
  let s: TestServer;
  const held: Held[] = [];
  const limiter = new InFlightLimiter({ readOnly: 2, mutating: 1 });
  const users = new Map<string, UserInfo>([[LOADER, loader]]);
  /** What was authorized: the limit sits before authorization (config.go), so a refused request costs no review. */
  const authorized: string[] = [];
  const authorizer: Authorizer = { authorize: async (user, info) => { authorized.push(`${user.username} ${info.verb} ${info.path}`); return { allowed: true }; } };

  before(async () => {
    s = await startTestServer({ inFlight: limiter, auth: { authenticators: [tokenUsers(users)], authorizer, rejectAnonymous: true } });
    users.set(s.token, admin);
    // ~20 MB of llamas: far more than socket buffers hold, so a LIST nobody reads stays in flight.
    const filler = 'f'.repeat(100 * 1024);
    for (let i = 0; i < 200; i++) {
      const r = await s.request('POST', NS, { token: LOADER, body: llama(`big-${i}`, { filler }) });
      assert.equal(r.status, 201, r.body);
    }
  });
  after(async () => {
    for (const h of held) h.release();
    await s?.close();
  });

  it('read-only requests past --max-requests-inflight get 429, Retry-After: 1 and a TooManyRequests Status', async () => {
    assert.deepEqual(limiter.counts(), { readOnly: 0, mutating: 0 });
    const watch = await s.stream(`${NS}?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dwatched`);
    assert.equal(watch.status, 200);
    held.push(await stalledList(s), await stalledList(s));
    await until('two LISTs in flight', () => limiter.counts().readOnly === 2);
    authorized.length = 0;
    const burst = await Promise.all(Array.from({ length: 5 }, () => s.request('GET', `${NS}/big-1`, { token: LOADER })));
    for (const r of burst) assertTooMany(r);
    assert.deepEqual(authorized, [], 'refused before authorization');
    assert.equal(limiter.counts().readOnly, 2, 'refused requests take no seat');

    // Exempt: a new watch (long-running), the health probes, and system:masters.
    const watch2 = await s.stream(`${NS}?watch=1&fieldSelector=metadata.name%3Dwatched`, { headers: { authorization: `Bearer ${LOADER}` } });
    assert.equal(watch2.status, 200);
    for (const p of ['/livez', '/readyz', '/healthz']) assert.equal((await s.request('GET', p, { token: LOADER })).status, 200, p);
    assert.equal((await s.request('GET', '/livez/ping', { token: LOADER })).status, 429, 'only the probe paths themselves are exempt');
    assert.equal((await s.request('GET', `${NS}/big-1`)).status, 200, 'system:masters is always served');

    // Mutating seats are separate: a create goes through, and the watches see it.
    const created = await s.request('POST', NS, { token: LOADER, body: llama('watched') });
    assert.equal(created.status, 201, created.body);
    for (const w of [watch, watch2]) assert.match(await w.next(), /"type":"ADDED".*"name":"watched"/);
    assert.equal(limiter.counts().readOnly, 2, 'watches do not count');
    watch.close();
    watch2.close();

    // Seats come back when the held responses end.
    for (const h of held.splice(0)) h.release();
    await until('the LISTs to end', () => limiter.counts().readOnly === 0);
    assert.equal((await s.request('GET', `${NS}/big-1`, { token: LOADER })).status, 200);
  });

  it('mutating requests past --max-mutating-requests-inflight get 429; reads still pass', async () => {
    const upload = uploadingCreate(s);
    held.push(upload);
    await until('a create in flight', () => limiter.counts().mutating === 1);
    assertTooMany(await s.request('POST', NS, { token: LOADER, body: llama('second') }));
    assertTooMany(await s.request('DELETE', `${NS}/big-2`, { token: LOADER }));
    assert.equal((await s.request('GET', `${NS}/big-2`, { token: LOADER })).status, 200, 'read-only seats are separate');
    upload.release();
    await until('the upload to end', () => limiter.counts().mutating === 0);
    assert.equal((await s.request('DELETE', `${NS}/big-2`, { token: LOADER })).status, 200);
    // The accessor metrics read: the highest counts since the last read, then reset (upstream's watermark).
    const marks = limiter.takeWatermarks();
    assert.equal(marks.mutating, 1);
    assert.ok(marks.readOnly >= 2, JSON.stringify(marks));
    assert.deepEqual(limiter.takeWatermarks(), { readOnly: 0, mutating: 0 });
  });
});
