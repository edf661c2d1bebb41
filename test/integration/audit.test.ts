// Audit over real HTTPS: the Audit-Id header, and the audit.k8s.io/v1 Event lines written under a
// policy with Metadata for reads and RequestResponse for llama writes, judged against
// k8s.io/apiserver's WithAuditInit/WithAudit (stages, user, objects per level, annotations), plus
// rotation by size and a malformed policy failing start-up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { openAuditing, type Auditing } from '../../src/server/audit/setup.js';
import type { Authorizer, UserInfo } from '../../src/server/auth/types.js';
import { startTestServer, tokenUsers, type TestServer } from '../helpers/testServer.js';
import { freePort } from '../cluster/controlPlane.js';

const ROOT = resolve(import.meta.dirname, '../..');
const API = '/apis/farm.example.com/v1alpha';
const NS = `${API}/namespaces/default/llamas`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  verbs: [delete]
  resources: [{group: farm.example.com, resources: [llamas]}]
  omitStages: [RequestReceived]
- level: RequestResponse
  verbs: [create, update, patch]
  resources: [{group: farm.example.com, resources: ["llamas", "llamas/status"]}]
  omitManagedFields: true
- level: Metadata
  verbs: [get, list, watch]
- level: None
`;

interface Ev {
  level: string; auditID: string; stage: string; requestURI: string; verb: string;
  user: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  impersonatedUser?: { username?: string; groups?: string[] };
  sourceIPs?: string[]; userAgent?: string;
  objectRef?: Record<string, string>;
  responseStatus?: { metadata: object; code?: number; status?: string; reason?: string; message?: string };
  requestObject?: Record<string, unknown>; responseObject?: { metadata?: Record<string, unknown> } & Record<string, unknown>;
  requestReceivedTimestamp: string; stageTimestamp: string; annotations?: Record<string, string>;
}

/** bob may not delete; everyone else may do anything (the reason lands in the annotations). */
const authorizer: Authorizer = {
  async authorize(user, info) {
    if (user.username === 'bob' && info.verb === 'delete') return { allowed: false, reason: 'bob never deletes' };
    return { allowed: true, reason: `test: ${user.username} may ${info.verb}` };
  },
};

const alice: UserInfo = { username: 'alice', uid: 'uid-alice', groups: ['farmers'], extra: { scopes: ['a', 'b'] } };
const bob: UserInfo = { username: 'bob', groups: ['visitors', 'system:authenticated'], extra: {} };
const ALICE = 'alice-token-5f1b0c2e9d';
const BOB = 'bob-token-77aa31c4e0';

async function events(path: string): Promise<Ev[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l).map((l) => JSON.parse(l) as Ev);
}

/** Events of one request once its last expected stage is written (ResponseComplete comes when the response closes). */
async function eventsOf(path: string, auditID: string, last = 'ResponseComplete'): Promise<Ev[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const mine = (await events(path)).filter((e) => e.auditID === auditID);
    if (mine.some((e) => e.stage === last) || Date.now() > deadline) return mine;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const header = (h: Record<string, string | string[] | undefined>, name: string) => h[name] as string;

describe('audit', () => {
  let dir: string;
  let s: TestServer;
  let log: string;
  let auditing: Auditing;
  const users = new Map<string, UserInfo>([[ALICE, alice], [BOB, bob]]);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'farm-audit-'));
    await writeFile(join(dir, 'policy.yaml'), POLICY);
    log = join(dir, 'logs', 'audit.log');
    auditing = (await openAuditing({ policyFile: join(dir, 'policy.yaml'), logPath: log, logMaxAgeDays: 0, logMaxBackups: 0, logMaxSizeMB: 0 }, pino({ level: 'silent' })))!;
    s = await startTestServer({ audit: auditing, auth: { authenticators: [tokenUsers(users)], authorizer, rejectAnonymous: true } });
    users.set(s.token, alice); // the helper's own streams authenticate with it
  });
  after(async () => {
    await s?.close();
    auditing?.sink.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('every response carries an Audit-Id: a new UUID, or the one the caller sent', async () => {
    const fresh = await s.request('GET', `${API}`, { token: ALICE });
    assert.match(header(fresh.headers, 'audit-id'), UUID);
    const other = await s.request('GET', `${API}`, { token: ALICE });
    assert.notEqual(header(other.headers, 'audit-id'), header(fresh.headers, 'audit-id'));
    const given = await s.request('GET', `${NS}/nope`, { token: ALICE, headers: { 'Audit-ID': 'from-kube-apiserver-1' } });
    assert.equal(given.status, 404);
    assert.equal(header(given.headers, 'audit-id'), 'from-kube-apiserver-1');
    const evs = await eventsOf(log, 'from-kube-apiserver-1');
    assert.deepEqual(evs.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
    assert.deepEqual(evs[1]!.responseStatus, { metadata: {}, status: 'Failure', message: 'llamas.farm.example.com "nope" not found', reason: 'NotFound', details: { name: 'nope', group: 'farm.example.com', kind: 'llamas' }, code: 404 });
    // Even a request refused before any handler (401) says which audit ID it had.
    const refused = await s.request('GET', NS, { token: 'no-such-token' });
    assert.equal(refused.status, 401);
    assert.match(header(refused.headers, 'audit-id'), UUID);
  });

  it('a create at RequestResponse: one event per stage, the caller, both objects, decision annotations', async () => {
    const body = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'dolly' }, spec: { weight: 120, height: 1.7 } };
    const r = await s.request('POST', NS, { token: ALICE, body, headers: { 'User-Agent': 'audit-test/1.0', 'X-Forwarded-For': '10.1.2.3, bogus, 10.4.5.6' } });
    assert.equal(r.status, 201, r.body);
    const id = header(r.headers, 'audit-id');
    const evs = await eventsOf(log, id);
    assert.deepEqual(evs.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
    const [received, complete] = evs as [Ev, Ev];
    for (const e of evs) {
      assert.equal(e.level, 'RequestResponse');
      assert.equal(e.verb, 'create');
      assert.equal(e.requestURI, '/apis/farm.example.com/v1alpha/namespaces/default/llamas');
      assert.deepEqual(e.user, { username: 'alice', uid: 'uid-alice', groups: ['farmers', 'system:authenticated'], extra: { scopes: ['a', 'b'] } });
      assert.equal(e.impersonatedUser, undefined);
      assert.deepEqual(e.sourceIPs, ['10.1.2.3', '10.4.5.6', '127.0.0.1']);
      assert.equal(e.userAgent, 'audit-test/1.0');
      assert.match(e.requestReceivedTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    }
    assert.equal(received.stageTimestamp, received.requestReceivedTimestamp);
    assert.ok(complete.stageTimestamp >= complete.requestReceivedTimestamp);
    assert.deepEqual(received.objectRef, { resource: 'llamas', namespace: 'default', apiGroup: 'farm.example.com', apiVersion: 'v1alpha' });
    assert.equal(received.requestObject, undefined); // not decoded yet when RequestReceived is written
    assert.equal(received.annotations, undefined);
    // LogRequestObject completes objectRef from the object; the response is the created llama.
    assert.deepEqual(complete.objectRef, { resource: 'llamas', namespace: 'default', name: 'dolly', apiGroup: 'farm.example.com', apiVersion: 'v1alpha' });
    assert.deepEqual(complete.requestObject, body);
    assert.deepEqual(complete.responseStatus, { metadata: {}, code: 201 });
    const created = r.json<{ metadata: { uid: string; managedFields?: unknown } }>();
    assert.ok(created.metadata.managedFields, 'the server records managedFields');
    assert.equal(complete.responseObject?.metadata?.uid, created.metadata.uid);
    assert.equal(complete.responseObject?.metadata?.managedFields, undefined, 'omitManagedFields: true');
    assert.deepEqual(complete.annotations, { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': 'test: alice may create' });
  });

  it('a read at Metadata: no objects; a patch records the patch; a delete omits RequestReceived', async () => {
    const get = await s.request('GET', `${NS}/dolly`, { token: ALICE });
    assert.equal(get.status, 200);
    const g = await eventsOf(log, header(get.headers, 'audit-id'));
    assert.deepEqual(g.map((e) => [e.stage, e.level, e.verb]), [['RequestReceived', 'Metadata', 'get'], ['ResponseComplete', 'Metadata', 'get']]);
    assert.ok(g.every((e) => e.requestObject === undefined && e.responseObject === undefined));
    assert.equal(g[1]!.objectRef?.name, 'dolly');
    // A LIST writes its own headers (hijacked, streamed): it carries the Audit-Id too.
    const list = await s.request('GET', NS, { token: ALICE });
    assert.equal(list.status, 200);
    const le = await eventsOf(log, header(list.headers, 'audit-id'));
    assert.deepEqual(le.map((e) => [e.stage, e.verb]), [['RequestReceived', 'list'], ['ResponseComplete', 'list']]);

    const patch = { metadata: { labels: { herd: 'north' } } };
    const p = await s.request('PATCH', `${NS}/dolly`, { token: ALICE, body: patch, contentType: 'application/merge-patch+json' });
    assert.equal(p.status, 200, p.body);
    const pe = await eventsOf(log, header(p.headers, 'audit-id'));
    assert.deepEqual(pe.map((e) => e.stage), ['RequestReceived', 'ResponseComplete']);
    assert.deepEqual(pe[1]!.requestObject, patch);
    assert.deepEqual((pe[1]!.responseObject?.metadata as { labels: unknown }).labels, { herd: 'north' });

    const d = await s.request('DELETE', `${NS}/dolly`, { token: ALICE });
    assert.equal(d.status, 200, d.body);
    const de = await eventsOf(log, header(d.headers, 'audit-id'));
    assert.deepEqual(de.map((e) => e.stage), ['ResponseComplete'], 'omitStages: [RequestReceived]');
    assert.equal(de[0]!.responseObject?.kind, 'Llama');
  });

  it('a watch: ResponseStarted when its headers go out, ResponseComplete when it ends', async () => {
    const w = await s.stream(`${NS}?watch=1`, { headers: { 'Audit-ID': 'watch-audit-1' } });
    assert.equal(w.status, 200);
    const started = await eventsOf(log, 'watch-audit-1', 'ResponseStarted');
    assert.deepEqual(started.map((e) => e.stage), ['RequestReceived', 'ResponseStarted']);
    assert.deepEqual(started[1]!.responseStatus, { metadata: {}, code: 200 });
    w.close();
    const all = await eventsOf(log, 'watch-audit-1');
    assert.deepEqual(all.map((e) => e.stage), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
    assert.equal(all[2]!.verb, 'watch');
  });

  it('impersonation: user is the caller, impersonatedUser whom it acts as', async () => {
    const body = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'carol-llama' }, spec: { weight: 1, height: 1 } };
    const r = await s.request('POST', NS, { token: ALICE, body, headers: { 'Impersonate-User': 'carol', 'Impersonate-Group': 'herders' } });
    assert.equal(r.status, 201, r.body);
    const evs = await eventsOf(log, header(r.headers, 'audit-id'));
    assert.equal(evs[0]!.impersonatedUser, undefined, 'RequestReceived is written before impersonation');
    assert.equal(evs[1]!.user.username, 'alice');
    assert.deepEqual(evs[1]!.impersonatedUser, { username: 'carol', groups: ['herders', 'system:authenticated'] });
  });

  it('a forbidden request: decision forbid with the reason; a failed authentication: one ResponseStarted', async () => {
    const r = await s.request('DELETE', `${NS}/carol-llama`, { token: BOB });
    assert.equal(r.status, 403);
    const evs = await eventsOf(log, header(r.headers, 'audit-id'));
    assert.deepEqual(evs.map((e) => e.stage), ['ResponseComplete']);
    assert.deepEqual(evs[0]!.annotations, { 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': 'bob never deletes' });
    assert.equal(evs[0]!.responseStatus?.code, 403);
    assert.equal(evs[0]!.responseStatus?.reason, 'Forbidden');

    const bad = await s.request('POST', NS, { token: 'not-a-known-token', body: { metadata: { name: 'x' } } });
    assert.equal(bad.status, 401);
    const be = await eventsOf(log, header(bad.headers, 'audit-id'), 'ResponseStarted');
    await new Promise((r2) => setTimeout(r2, 100));
    assert.deepEqual((await eventsOf(log, header(bad.headers, 'audit-id'), 'ResponseStarted')).map((e) => e.stage), ['ResponseStarted']);
    assert.deepEqual(be[0]!.user, {});
    assert.equal(be[0]!.responseStatus?.code, 401);
    assert.equal(be[0]!.responseStatus?.reason, 'Unauthorized');
  });

  it('no bearer token and no Authorization header anywhere in the log', async () => {
    const text = await readFile(log, 'utf8');
    assert.ok(text.length > 1000, 'the log has the events above');
    for (const secret of [ALICE, BOB, s.token, 'not-a-known-token', 'no-such-token']) assert.ok(!text.includes(secret), `token ${secret} leaked`);
    assert.ok(!/authorization"\s*:/i.test(text.replace(/"authorization\.k8s\.io\/(decision|reason)"/g, '')), 'an Authorization header was logged');
  });
});

describe('Audit-ID in the server log', () => {
  it("every line a request logs carries its auditID (fastify's request id), and nothing else identifies it", async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => { lines.push(l); } });
    const s = await startTestServer({ logger });
    try {
      const r = await s.request('GET', `${NS}/missing`, { headers: { 'Audit-ID': 'log-audit-7' } });
      assert.equal(r.status, 404);
      const parsed = lines.map((l) => JSON.parse(l) as { auditID?: string; reqId?: string; msg?: string });
      const mine = parsed.filter((l) => l.auditID === 'log-audit-7');
      assert.deepEqual(mine.map((l) => l.msg), ['incoming request', 'authenticated', 'request completed']);
      assert.ok(parsed.every((l) => l.reqId === undefined));
      // A caller's long Audit-ID: echoed and audited whole, but each log line carries its first 64 characters.
      const long = `${'a'.repeat(64)}${'z'.repeat(8_000)}`;
      const echoed = await s.request('GET', `${NS}/missing`, { headers: { 'Audit-ID': long } });
      assert.equal(echoed.headers['audit-id'], long);
      const logged = lines.map((l) => JSON.parse(l) as { auditID?: string }).filter((l) => l.auditID?.startsWith('a'.repeat(64)));
      assert.equal(logged.length, 3);
      assert.ok(logged.every((l) => l.auditID === 'a'.repeat(64)), 'GetAuditIDTruncated');
    } finally {
      await s.close();
    }
  });
});

describe('audit log rotation through the server', () => {
  it('--audit-log-maxsize 1 with --audit-log-maxbackup 2: rotated files of whole lines, at most 2 kept', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farm-audit-rot-'));
    await writeFile(join(dir, 'policy.yaml'), POLICY);
    const auditing = (await openAuditing({ policyFile: join(dir, 'policy.yaml'), logPath: join(dir, 'audit.log'), logMaxAgeDays: 0, logMaxBackups: 2, logMaxSizeMB: 1 }, pino({ level: 'silent' })))!;
    const s = await startTestServer({ audit: auditing });
    try {
      const big = 'x'.repeat(200 * 1024); // each create logs it twice (request and response): ~400 KiB per event
      for (let i = 0; i < 8; i++) {
        const r = await s.request('POST', NS, { body: { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: `big-${i}`, annotations: { big } }, spec: { weight: 1, height: 1 } } });
        assert.equal(r.status, 201, r.body);
      }
      await new Promise((r) => setTimeout(r, 200));
      const files = (await readdir(dir)).filter((f) => f.startsWith('audit')).sort();
      assert.equal(files.length, 3, files.join(', ')); // audit.log + 2 backups
      assert.ok(files.every((f) => f === 'audit.log' || /^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/.test(f)), files.join(', '));
      for (const f of files) {
        const text = await readFile(join(dir, f), 'utf8');
        assert.ok(Buffer.byteLength(text) <= 1024 * 1024, `${f} is over 1 MiB`);
        for (const line of text.split('\n').filter((l) => l)) {
          const e = JSON.parse(line) as Ev;
          assert.equal(e.verb, 'create');
          if (e.stage === 'ResponseComplete') assert.equal((e.requestObject?.metadata as { annotations: { big: string } }).annotations.big, big);
        }
      }
    } finally {
      await s.close();
      auditing.sink.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('audit start-up', () => {
  it('a malformed policy stops the real process with one clear line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farm-audit-start-'));
    try {
      const policy = join(dir, 'policy.yaml');
      await writeFile(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n');
      const port = await freePort();
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((done, fail) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', String(port), '--cert-dir', join(dir, 'certs'),
          '--audit-policy-file', policy, '--audit-log-path', join(dir, 'audit.log')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c; });
        const t = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`did not exit: ${err}`)); }, 30_000);
        child.on('exit', (c) => { clearTimeout(t); done({ code: c, stderr: err }); });
      });
      assert.equal(code, 1);
      assert.equal(stderr, `farm-apiserver: cannot set up auditing: rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse": from file ${policy}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
