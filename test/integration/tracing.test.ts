// Tracing (--tracing-config-file): spans exported over real OTLP/gRPC to an in-process receiver that
// decodes the protobuf itself (test/helpers/otlpReceiver.ts). A request carrying a W3C traceparent
// gets a server span that is the child of it, with storage and serialization spans under it;
// sampling is parent-based with samplingRatePerMillion for roots, as kube's; a bad configuration
// file stops start-up with one clear line. The OpenTelemetry globals are process-wide, so each block
// starts tracing, uses it and shuts it down before the next.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { startTracing, type Tracing } from '../../src/server/observability/tracing.js';
import { inSpan } from '../../src/apimachinery/tracing.js';
import { errors } from '../../src/apimachinery/status.js';
import { tokenAuthenticator } from '../../src/server/auth/standalone.js';
import type { AuthChain } from '../../src/server/server.js';
import type { UserInfo } from '../../src/server/auth/types.js';
import { parseTracingConfiguration, readTracingConfiguration, TracingConfigError } from '../../src/server/observability/tracingConfig.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { freePort } from '../cluster/controlPlane.js';

const ROOT = resolve(import.meta.dirname, '../..');
const SERVER = 2;
const INTERNAL = 1;
const LLAMAS = '/apis/farm.example.com/v1alpha/namespaces/default/llamas';

let dir: string;
before(async () => { dir = await mkdtemp(join(tmpdir(), 'farm-tracing-')); });
after(async () => { await rm(dir, { recursive: true, force: true }); });

const newTraceId = () => randomBytes(16).toString('hex');
const newSpanId = () => randomBytes(8).toString('hex');
const traceparent = (traceId: string, spanId: string, sampled: boolean) => `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;

async function configFile(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

const tracingYaml = (endpoint: string, rate?: number) =>
  `apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: ${endpoint}\n${rate === undefined ? '' : `samplingRatePerMillion: ${rate}\n`}`;

interface Setup { receiver: OtlpReceiver; tracing: Tracing; server: TestServer }

async function setUp(name: string, rate?: number, auth?: AuthChain): Promise<Setup> {
  const receiver = await startOtlpReceiver();
  const tracing = await startTracing(await configFile(name, tracingYaml(receiver.endpoint, rate)), pino({ level: 'silent' }));
  const server = await startTestServer(auth ? { tracing, auth } : { tracing });
  // The server's own admin token is known only now; the chain is read per request.
  auth?.authenticators.push(tokenAuthenticator(server.token));
  return { receiver, tracing, server };
}

/**
 * Callers by bearer token, each authenticated through a timed step named as the delegated
 * authenticator's (TokenReview) and authorized through one named as its SubjectAccessReview: they
 * run before and after the request's span exists.
 */
const CALLERS: Record<string, UserInfo> = {
  'Bearer alice': { username: 'alice', groups: ['developers', 'system:authenticated'], extra: {} },
  'Bearer prometheus': { username: 'prometheus', groups: ['system:monitoring', 'system:authenticated'], extra: {} },
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const reviewedAuth = (): AuthChain => ({
  rejectAnonymous: true,
  authenticators: [{
    authenticate: async (req) => {
      const header = req.headers.authorization ?? '';
      if (header === 'Bearer nobody') throw errors.unauthorized();
      const user = CALLERS[header];
      return user && inSpan('TokenReview', () => ({ reviewed: user.username }), async () => { await pause(3); return user; });
    },
  }],
  authorizer: { authorize: (user) => inSpan('SubjectAccessReview', () => ({ user: user.username }), async () => { await pause(1); return { allowed: true }; }) },
});

async function tearDown(s: Setup | undefined): Promise<void> {
  await s?.server.close();
  await s?.tracing.shutdown();
  await s?.receiver.close();
}

const llama = (name: string) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 120, height: 1.7 } });

/** The spans of a trace once `count` arrived: flushes while waiting, since the server span ends as the response closes. */
async function traceOf(st: Setup, traceId: string, count: number): Promise<ReceivedSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await st.tracing.flush();
    const got = st.receiver.spans.filter((sp) => sp.traceId === traceId);
    if (got.length >= count) {
      await st.tracing.flush(); // anything that ended before is out too
      return st.receiver.spans.filter((sp) => sp.traceId === traceId);
    }
    if (Date.now() > deadline) assert.fail(`trace ${traceId}: ${got.length} of ${count} spans: ${got.map((sp) => sp.name).join(', ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The server span of the request answered with this Audit-Id (for traces whose id the test did not choose). */
async function serverSpanOf(st: Setup, auditId: unknown): Promise<ReceivedSpan> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await st.tracing.flush();
    const found = st.receiver.spans.find((sp) => sp.kind === SERVER && sp.attributes['audit-id'] === auditId);
    if (found) return found;
    if (Date.now() > deadline) assert.fail(`no server span with audit-id ${String(auditId)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function only(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one ${name} span among: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

function assertChildOf(child: ReceivedSpan, parent: ReceivedSpan): void {
  assert.equal(child.traceId, parent.traceId, child.name);
  assert.equal(child.parentSpanId, parent.spanId, `${child.name} is a child of ${parent.name}`);
  assert.ok(child.startNanos >= parent.startNanos && child.endNanos <= parent.endNanos, `${child.name} lies within ${parent.name}: ${child.startNanos - parent.startNanos} ${parent.endNanos - child.endNanos} ${parent.endNanos - parent.startNanos}`);
}

describe('tracing with samplingRatePerMillion: 0 (only sampled parents are traced)', () => {
  let s: Setup;
  before(async () => { s = await setUp('rate0.yaml', 0); });
  after(() => tearDown(s));

  it('a GET with a sampled traceparent: the server span is its child; storage and serialization spans are under it', async () => {
    assert.equal((await s.server.request('POST', LLAMAS, { body: llama('traced') })).status, 201);
    const traceId = newTraceId();
    const parentId = newSpanId();
    const res = await s.server.request('GET', `${LLAMAS}/traced?pretty=false`, {
      headers: { traceparent: traceparent(traceId, parentId, true), tracestate: 'aggregator=7', 'user-agent': 'tracing-test/1.0' },
    });
    assert.equal(res.status, 200, res.body);
    const spans = await traceOf(s, traceId, 3);

    const server = only(spans, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas/{:name}');
    assert.equal(server.kind, SERVER);
    assert.equal(server.parentSpanId, parentId);
    assert.equal(server.traceState, 'aggregator=7');
    assert.equal(server.attributes['http.method'], 'GET');
    assert.equal(server.attributes['http.target'], `${LLAMAS}/traced?pretty=false`);
    assert.equal(server.attributes['http.status_code'], 200n);
    assert.equal(server.attributes['user_agent.original'], 'tracing-test/1.0');
    assert.equal(server.attributes['audit-id'], res.headers['audit-id']);
    assert.equal(server.resource['service.name'], 'farm-apiserver');

    const storage = only(spans, 'storage.Get');
    assertChildOf(storage, server);
    assert.equal(storage.kind, INTERNAL);
    assert.equal(storage.attributes.key, 'default/traced');
    assert.equal(storage.attributes.resource, 'llamas.farm.example.com');

    const serialize = only(spans, 'SerializeObject');
    assertChildOf(serialize, server);
    assert.equal(serialize.attributes.mediaType, 'application/json');
    assert.equal(serialize.attributes.url, `${LLAMAS}/traced`);
    assert.equal(serialize.attributes['audit-id'], res.headers['audit-id']);
  });

  it('a create and a list: storage.Create and storage.GetList under their server spans, and the status code', async () => {
    const createTrace = newTraceId();
    const created = await s.server.request('POST', LLAMAS, { body: llama('second'), headers: { traceparent: traceparent(createTrace, newSpanId(), true) } });
    assert.equal(created.status, 201, created.body);
    const listTrace = newTraceId();
    const listed = await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(listTrace, newSpanId(), true), accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
    assert.equal(listed.status, 200, listed.body);
    const missingTrace = newTraceId();
    assert.equal((await s.server.request('GET', `${LLAMAS}/nobody`, { headers: { traceparent: traceparent(missingTrace, newSpanId(), true) } })).status, 404);

    const create = await traceOf(s, createTrace, 3);
    const createServer = only(create, 'POST /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas');
    assert.equal(createServer.attributes['http.status_code'], 201n);
    assertChildOf(only(create, 'storage.Create'), createServer);
    assertChildOf(only(create, 'SerializeObject'), createServer);

    const list = await traceOf(s, listTrace, 3);
    const listServer = only(list, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas');
    const getList = only(list, 'storage.GetList');
    assertChildOf(getList, listServer);
    assert.equal(getList.attributes.key, 'default/');
    const listSerialize = only(list, 'SerializeObject');
    assertChildOf(listSerialize, listServer);
    assert.equal(listSerialize.attributes.mediaType, 'application/json;as=Table;v=v1;g=meta.k8s.io');

    // A 404 is an answer, not a server error: the status code is recorded, the span status stays unset.
    const missing = await traceOf(s, missingTrace, 2);
    const missingServer = only(missing, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas/{:name}');
    assert.equal(missingServer.attributes['http.status_code'], 404n);
    assert.equal(missingServer.statusCode, 0);
    assertChildOf(only(missing, 'storage.Get'), missingServer);
  });

  it('an unsampled parent and a request without traceparent export nothing (parent-based, rate 0 never samples a root)', async () => {
    const before = s.receiver.spans.length;
    const unsampled = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(unsampled, newSpanId(), false) } })).status, 200);
    assert.equal((await s.server.request('GET', LLAMAS)).status, 200);
    // A sampled request afterwards proves the pipeline delivers: by the time its spans arrived,
    // anything of the two before would have too.
    const marker = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(marker, newSpanId(), true) } })).status, 200);
    await traceOf(s, marker, 3);
    const others = s.receiver.spans.slice(before).filter((sp) => sp.traceId !== marker);
    assert.deepEqual(others.map((sp) => `${sp.traceId} ${sp.name}`), []);
  });

  it('a traceparent that does not parse starts no trace and fails nothing', async () => {
    const before = s.receiver.spans.length;
    const res = await s.server.request('GET', LLAMAS, { headers: { traceparent: '00-zz-not-a-trace-01' } });
    assert.equal(res.status, 200);
    const marker = newTraceId();
    await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(marker, newSpanId(), true) } });
    await traceOf(s, marker, 3);
    assert.equal(s.receiver.spans.slice(before).filter((sp) => sp.traceId !== marker).length, 0);
  });
});

describe('tracing with samplingRatePerMillion: 1000000 (every root is sampled)', () => {
  let s: Setup;
  before(async () => { s = await setUp('rate1m.yaml', 1_000_000); });
  after(() => tearDown(s));

  it('a request without traceparent starts its own trace; an unsampled parent still decides (parent-based)', async () => {
    const before = s.receiver.spans.length;
    const unsampled = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(unsampled, newSpanId(), false) } })).status, 200);
    const res = await s.server.request('GET', '/version');
    assert.equal(res.status, 200);
    const root = await serverSpanOf(s, res.headers['audit-id']);
    assert.equal(s.receiver.spans.slice(before).filter((sp) => sp.kind === SERVER && sp.attributes['audit-id'] === res.headers['audit-id']).length, 1);
    assert.equal(root.parentSpanId, '');
    assert.equal(root.name, 'GET', 'a non-resource request is named by its method alone');
    assert.equal(s.receiver.spans.filter((sp) => sp.traceId === unsampled).length, 0);
  });
});

describe('whose traceparent is trusted (WithTracing after authentication, notSystemPrivilegedGroup)', () => {
  let s: Setup;
  before(async () => { s = await setUp('trust-rate0.yaml', 0, reviewedAuth()); });
  after(() => tearDown(s));

  it('system:monitoring continues the caller\'s trace; authentication\'s span, timed before the span existed, sits under it', async () => {
    const traceId = newTraceId();
    const parentId = newSpanId();
    const auditId = `${'b'.repeat(64)}-and-more`;
    const res = await s.server.request('GET', LLAMAS, { token: 'prometheus', headers: { traceparent: traceparent(traceId, parentId, true), 'audit-id': auditId } });
    assert.equal(res.status, 200, res.body);
    const spans = await traceOf(s, traceId, 5);
    const server = only(spans, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas');
    assert.equal(server.parentSpanId, parentId);
    assert.equal(server.attributes['audit-id'], 'b'.repeat(64), 'GetAuditIDTruncated');
    assert.deepEqual(server.links, []);
    const review = only(spans, 'TokenReview');
    assertChildOf(review, server);
    assert.equal(review.attributes.reviewed, 'prometheus');
    assert.ok(review.endNanos - review.startNanos >= 2_000_000n, 'the replayed span keeps the time the review took');
    assertChildOf(only(spans, 'SubjectAccessReview'), server);
    assertChildOf(only(spans, 'storage.GetList'), server);
    // The span starts when the request arrived, before authentication.
    assert.ok(review.startNanos > server.startNanos);
  });

  it('anyone else cannot join or sample a trace: with rate 0 their sampled traceparent exports nothing; a 401 has no span', async () => {
    const before = s.receiver.spans.length;
    const untrusted = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { token: 'alice', headers: { traceparent: traceparent(untrusted, newSpanId(), true) } })).status, 200);
    const refused = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { token: 'nobody', headers: { traceparent: traceparent(refused, newSpanId(), true) } })).status, 401);
    const marker = newTraceId();
    assert.equal((await s.server.request('GET', LLAMAS, { headers: { traceparent: traceparent(marker, newSpanId(), true) } })).status, 200);
    await traceOf(s, marker, 3);
    assert.deepEqual(s.receiver.spans.slice(before).filter((sp) => sp.traceId !== marker).map((sp) => sp.name), []);
  });
});

describe('an untrusted caller\'s traceparent with samplingRatePerMillion: 1000000', () => {
  let s: Setup;
  before(async () => { s = await setUp('trust-rate1m.yaml', 1_000_000, reviewedAuth()); });
  after(() => tearDown(s));

  it('starts a new trace that links to the caller\'s span; the caller\'s trace gets nothing', async () => {
    const traceId = newTraceId();
    const parentId = newSpanId();
    const res = await s.server.request('GET', LLAMAS, { token: 'alice', headers: { traceparent: traceparent(traceId, parentId, false), tracestate: 'vendor=1' } });
    assert.equal(res.status, 200, res.body);
    const server = await serverSpanOf(s, res.headers['audit-id']);
    assert.notEqual(server.traceId, traceId);
    assert.equal(server.parentSpanId, '');
    assert.equal(server.traceState, '');
    // An unsampled traceparent does not decide either: the link is kept, the root sampler decides.
    assert.deepEqual(server.links, [{ traceId, spanId: parentId }]);
    const spans = await traceOf(s, server.traceId, 4);
    assertChildOf(only(spans, 'TokenReview'), server);
    assertChildOf(only(spans, 'SubjectAccessReview'), server);
    assert.equal(s.receiver.spans.filter((sp) => sp.traceId === traceId).length, 0);
  });
});

describe('--tracing-config-file errors', () => {
  const decodeErr = (text: string) => {
    try { parseTracingConfiguration(text, 'tracing.yaml'); } catch (e) { assert.ok(e instanceof TracingConfigError, String(e)); return e.message; }
    assert.fail(`accepted:\n${text}`);
  };
  const head = 'apiVersion: apiserver.config.k8s.io/v1alpha1\nkind: TracingConfiguration\n';

  it('accepts the three versions, an empty file (the defaults) and kube\'s endpoint forms', () => {
    for (const v of ['v1alpha1', 'v1beta1', 'v1']) {
      assert.deepEqual(parseTracingConfiguration(`apiVersion: apiserver.config.k8s.io/${v}\nkind: TracingConfiguration\nsamplingRatePerMillion: 12345\n`, 'f'),
        { endpoint: 'localhost:4317', samplingRatePerMillion: 12345 });
    }
    assert.deepEqual(parseTracingConfiguration('', 'f'), { endpoint: 'localhost:4317' });
    for (const endpoint of ['127.0.0.1:4317', 'dns:///collector:4317', 'unix:///run/otel.sock']) {
      assert.equal(parseTracingConfiguration(`${head}endpoint: ${endpoint}\n`, 'f').endpoint, endpoint);
    }
  });

  it('names what is wrong, as kube-apiserver does', () => {
    assert.match(decodeErr(`${head}foo: bar\n`), /^unable to decode tracing configuration data: strict decoding error: unknown field "foo"$/);
    assert.match(decodeErr(`${head}endpoint: localhost:4317\nendpoint: localhost:4318\n`), /^unable to decode tracing configuration data: strict decoding error: .*unique/);
    assert.match(decodeErr('apiVersion: apps/v1\nkind: DaemonSet\n'), /^unable to decode tracing configuration data: no kind "DaemonSet" is registered for version "apps\/v1"/);
    assert.match(decodeErr(`${head}samplingRatePerMillion: many\n`), /^unable to decode tracing configuration data: strict decoding error: samplingRatePerMillion: /);
    assert.equal(decodeErr(`${head}samplingRatePerMillion: -1\n`), 'failed to validate tracing configuration: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive');
    assert.equal(decodeErr(`${head}samplingRatePerMillion: 1000001\n`),
      'failed to validate tracing configuration: samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million');
    assert.match(decodeErr(`${head}endpoint: http://collector:4317\n`),
      /^failed to validate tracing configuration: endpoint: Invalid value: "http:\/\/collector:4317": unsupported scheme: http\. {2}Options are none, dns, unix, or unix-abstract\./);
    assert.match(decodeErr('endpoint: localhost:4317\n'), /Object 'apiVersion' is missing/);
  });

  it('a missing file is named with its path', async () => {
    const missing = join(dir, 'absent.yaml');
    await assert.rejects(readTracingConfiguration(missing), {
      message: `unable to read tracing configuration from ${JSON.stringify(missing)}: open ${missing}: no such file or directory`,
    });
  });

  it('the real process refuses to start with one line naming the flag, the file and the field', async () => {
    const bad = await configFile('bad.yaml', `${head}samplingRatePerMillion: 10\nfoo: bar\n`);
    const run = await runMain(['--standalone', '--port', String(await freePort()), '--cert-dir', join(dir, 'certs-bad'), '--tracing-config-file', bad]);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr, `farm-apiserver: cannot set up tracing from --tracing-config-file ${bad}: unable to decode tracing configuration data: strict decoding error: unknown field "foo"\n`);
  });
});

describe('the real process with --tracing-config-file', () => {
  it('traces a request into the configured collector and flushes on SIGTERM', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const file = await configFile('main.yaml', tracingYaml(receiver.endpoint));
      const port = await freePort();
      const certDir = join(dir, 'certs-main');
      const traceId = newTraceId();
      const parentId = newSpanId();
      const run = await runMain(['--standalone', '--port', String(port), '--cert-dir', certDir, '--tracing-config-file', file], async () => {
        const token = (await readFile(join(certDir, 'token'), 'utf8')).trim();
        const ca = await readFile(join(certDir, 'ca.crt'), 'utf8');
        const status = await new Promise<number>((done, fail) => {
          const req = httpsRequest(`https://127.0.0.1:${port}${LLAMAS}`, {
            ca, headers: { authorization: `Bearer ${token}`, traceparent: traceparent(traceId, parentId, true) },
          }, (res) => { res.resume(); res.on('end', () => done(res.statusCode ?? 0)); });
          req.on('error', fail);
          req.end();
        });
        assert.equal(status, 200);
      });
      assert.equal(run.code, 0, run.stderr);
      // No flush was asked for: the spans arrive because shutdown exports what is left.
      const spans = await receiver.waitForTrace(traceId, 3, 5_000);
      const server = only(spans, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas');
      assert.equal(server.parentSpanId, parentId);
      assertChildOf(only(spans, 'storage.GetList'), server);
    } finally {
      await receiver.close();
    }
  });
});

interface Run { code: number | null; stderr: string }

/** Runs src/main.ts; once it serves, `whileServing` runs, then SIGTERM. A start that fails ends at once. */
function runMain(args: string[], whileServing?: () => Promise<void>): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let failure: unknown;
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`main ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`)); }, 30_000);
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      const was = stdout;
      stdout += c;
      if (!/is serving on/.test(was) && /is serving on/.test(stdout)) {
        void (whileServing ?? (async () => {}))().catch((e: unknown) => { failure = e; }).finally(() => child.kill('SIGTERM'));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (failure) reject(failure instanceof Error ? failure : new Error(String(failure)));
      else resolveRun({ code, stderr });
    });
  });
}
