// kube-apiserver's apiserver_* metrics on the real HTTPS server, judged against k8s.io/apiserver v0.33
// (pkg/endpoints/metrics/metrics.go, installer.go, handlers/watch.go, server/filters/maxinflight.go,
// storage/etcd3/metrics): a scripted workload, then /metrics parsed and compared with what was sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RequestInfo } from '../../src/apimachinery/types.js';
import { createMetrics, observeStoredObjects, type FarmMetrics } from '../../src/server/observability/metrics.js';
import { tokenAuthenticator } from '../../src/server/auth/standalone.js';
import { bucketBounds, labelNameSets, parseExposition, select, total, type Exposition } from '../helpers/exposition.js';
import { startTestServer, type Stream, type TestServer } from '../helpers/testServer.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const API = '/apis/farm.example.com/v1alpha';
const coll = `${API}/namespaces/default/llamas`;
const GVR = { group: 'farm.example.com', version: 'v1alpha', resource: 'llamas' };
const llama = (name: string, labels: Record<string, string> = {}) =>
  ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels }, spec: { weight: 80, height: 1.2 } });

/** Upstream's buckets, as client_golang writes them (strconv 'g'). */
const DURATION_LE = ['0.005', '0.025', '0.05', '0.1', '0.2', '0.4', '0.6', '0.8', '1', '1.25', '1.5', '2', '3', '4', '5', '6', '8', '10', '15', '20', '30', '45', '60', '+Inf'];
const SLI_LE = DURATION_LE.slice(2);
const RESPONSE_SIZE_LE = ['1000', '10000', '100000', '1e+06', '1e+07', '1e+08', '1e+09', '+Inf'];
const WATCH_SIZE_LE = ['1024', '2048', '4096', '8192', '16384', '32768', '65536', '131072', '+Inf'];
const SLI_LABELS = 'component,group,resource,scope,subresource,verb,version';

interface Expected { verb: string; scope: string; code: number; subresource?: string; dry_run?: string; nonResource?: string }

describe('kube-apiserver metrics (apiserver_*)', () => {
  let ts: TestServer;
  let metrics: FarmMetrics;
  const sent = new Map<string, number>();
  const key = (l: Record<string, string>) => JSON.stringify(Object.keys(l).sort().map((k) => [k, l[k]]));
  const labelsOf = (e: Expected): Record<string, string> => e.nonResource !== undefined
    ? { verb: e.verb, dry_run: '', group: '', version: '', resource: '', subresource: e.nonResource, scope: '', component: '', code: String(e.code) }
    : { verb: e.verb, dry_run: e.dry_run ?? '', ...GVR, subresource: e.subresource ?? '', scope: e.scope, component: 'apiserver', code: String(e.code) };
  const bodies = new Map<string, string[]>();

  /** Sends a request and records the apiserver_request_total series it must add to (undefined: none). */
  async function send(method: string, path: string, expect: Expected | undefined, opts: Parameters<TestServer['request']>[2] = {}) {
    const r = await ts.request(method, path, opts);
    if (expect) {
      assert.equal(r.status, expect.code, `${method} ${path}: ${r.body.slice(0, 300)}`);
      const k = key(labelsOf(expect));
      sent.set(k, (sent.get(k) ?? 0) + 1);
      const sizeKey = `${expect.verb}/${expect.scope}/${expect.nonResource ?? ''}`;
      bodies.set(sizeKey, [...(bodies.get(sizeKey) ?? []), r.body]);
    }
    return r;
  }
  const scrape = async (): Promise<Exposition> => {
    const r = await ts.request('GET', '/metrics');
    assert.equal(r.status, 200);
    return parseExposition(r.body);
  };
  async function until(what: string, check: (e: Exposition) => boolean): Promise<Exposition> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const e = await scrape();
      if (check(e)) return e;
      if (Date.now() > deadline) throw new Error(`metrics: ${what} not within 5 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async function lines(s: Stream, n: number): Promise<string[]> {
    const deadline = Date.now() + 5000;
    while (s.lines.length < n) {
      if (Date.now() > deadline) throw new Error(`watch: ${s.lines.length} of ${n} events within 5 s`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return s.lines.slice(0, n);
  }

  before(async () => {
    metrics = createMetrics({ defaultMetrics: false });
    ts = await startTestServer({ metrics });
    observeStoredObjects(metrics, ts.resources, ts.stores);
  });
  after(async () => { await ts?.close(); });

  let watchLines: string[] = [];
  let afterWorkload: Exposition;
  let idle: Exposition;

  it('runs the workload; a watch sees its events, is long-running while open and leaves in-flight counts alone', async () => {
    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 201 }, { body: llama('a') });
    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 409 }, { body: llama('a') });
    await send('GET', `${coll}/a`, { verb: 'GET', scope: 'resource', code: 200 });
    await send('GET', `${coll}/nope`, { verb: 'GET', scope: 'resource', code: 404 });
    const list = await send('GET', coll, { verb: 'LIST', scope: 'namespace', code: 200 });
    await send('GET', `${API}/llamas`, { verb: 'LIST', scope: 'cluster', code: 200 });
    await send('GET', '/healthz', { verb: 'GET', scope: '', code: 200, nonResource: '/healthz' });
    // A read that fails with a 5xx (a resourceVersion the store never reaches: 504 after 3 s), for the SLO rules.
    const future = BigInt(list0RV(await send('GET', coll, { verb: 'LIST', scope: 'namespace', code: 200 }))) + 1_000_000n;
    await send('GET', `${coll}?resourceVersion=${future}`, { verb: 'LIST', scope: 'namespace', code: 504 });
    // Not instrumented upstream: other non-resource paths, refused requests, paths and methods no route serves.
    await send('GET', '/version', undefined);
    await send('GET', '/apis', undefined);
    assert.equal((await send('GET', `${coll}/a`, undefined, { token: 'wrong' })).status, 401);
    assert.equal((await send('GET', `${API}/namespaces/default/madeups/x`, undefined)).status, 404);
    assert.equal((await send('POST', `${coll}/a`, undefined, { body: llama('a') })).status, 405);
    assert.equal((await send('GET', `${coll}/a/madeup`, undefined)).status, 404);

    const rv = list.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
    const watch = await ts.stream(`${coll}?watch=true&resourceVersion=${rv}`);
    assert.equal(watch.status, 200);
    const watching = { verb: 'WATCH', ...GVR, subresource: '', scope: 'namespace', component: 'apiserver' };
    await until('longrunning WATCH = 1', (e) => total(e, 'apiserver_longrunning_requests', watching) === 1);

    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 201 }, { body: llama('b') });
    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 201 }, { body: llama('c1', { batch: 'x' }) });
    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 201 }, { body: llama('c2', { batch: 'x' }) });
    const a = (await send('GET', `${coll}/a`, { verb: 'GET', scope: 'resource', code: 200 })).json<Record<string, unknown>>();
    await send('PUT', `${coll}/a`, { verb: 'PUT', scope: 'resource', code: 200 }, { body: { ...a, spec: { weight: 81, height: 1.2 } } });
    await send('PATCH', `${coll}/a`, { verb: 'PATCH', scope: 'resource', code: 200 }, { body: { spec: { weight: 82 } }, contentType: 'application/merge-patch+json' });
    await send('PATCH', `${coll}/d?fieldManager=metrics-test`, { verb: 'APPLY', scope: 'resource', code: 201 }, { body: llama('d'), contentType: 'application/apply-patch+yaml' });
    await send('POST', `${coll}?dryRun=All&dryRun=All`, { verb: 'POST', scope: 'resource', code: 201, dry_run: 'All' }, { body: llama('e') });
    await send('PATCH', `${coll}/a/status`, { verb: 'PATCH', scope: 'resource', code: 200, subresource: 'status' }, { body: { status: { observedGeneration: 1 } }, contentType: 'application/merge-patch+json' });
    await send('DELETE', `${coll}/b`, { verb: 'DELETE', scope: 'resource', code: 200 });
    // DELETECOLLECTION is reported as DELETE: MonitorRequest's verb comes from the HTTP method.
    await send('DELETE', `${coll}?labelSelector=batch%3Dx`, { verb: 'DELETE', scope: 'namespace', code: 200 });

    // ADDED b c1 c2, MODIFIED a (put, patch, status), ADDED d, DELETED b c1 c2; the dry run adds nothing.
    assert.deepEqual((await lines(watch, 10)).map((l) => (JSON.parse(l) as { type: string }).type),
      ['ADDED', 'ADDED', 'ADDED', 'MODIFIED', 'MODIFIED', 'ADDED', 'MODIFIED', 'DELETED', 'DELETED', 'DELETED']);

    // A second with no request starting or ending: the open watch is not in flight (long-running).
    await new Promise((r) => setTimeout(r, 2200));
    idle = await scrape();
    assert.equal(total(idle, 'apiserver_current_inflight_requests', { request_kind: 'readOnly' }), 0);
    assert.equal(total(idle, 'apiserver_current_inflight_requests', { request_kind: 'mutating' }), 0);
    await send('POST', coll, { verb: 'POST', scope: 'resource', code: 201 }, { body: llama('f') });
    await until('a mutating request in flight', (e) => total(e, 'apiserver_current_inflight_requests', { request_kind: 'mutating' }) === 1);

    watchLines = await lines(watch, 11); // and ADDED f
    watch.close();
    await until('longrunning WATCH back to 0', (e) => total(e, 'apiserver_longrunning_requests', watching) === 0
      && total(e, 'apiserver_request_total', { verb: 'WATCH' }) === 1);
    sent.set(key(labelsOf({ verb: 'WATCH', scope: 'namespace', code: 200 })), 1);

    // The deprecated /watch/ path: counted as WATCH by its route, but RecordLongRunning sees a GET of a
    // collection without ?watch, so the gauge says LIST (upstream's labels, kept).
    const legacy = await ts.stream(`${API}/watch/namespaces/default/llamas?resourceVersion=${rv}`);
    await until('longrunning LIST = 1', (e) => total(e, 'apiserver_longrunning_requests', { ...watching, verb: 'LIST' }) === 1);
    await lines(legacy, watchLines.length); // the same history again
    legacy.close();
    afterWorkload = await until('the legacy watch ended', (e) => total(e, 'apiserver_longrunning_requests', { ...watching, verb: 'LIST' }) === 0
      && total(e, 'apiserver_request_total', { verb: 'WATCH' }) === 2);
    sent.set(key(labelsOf({ verb: 'WATCH', scope: 'namespace', code: 200 })), 2);
  });

  it('apiserver_request_total: one series per label set sent, counts equal to the requests sent, nothing else', () => {
    const got = new Map(select(afterWorkload, 'apiserver_request_total').map((s) => [key(s.labels), s.value]));
    assert.deepEqual(Object.fromEntries(got), Object.fromEntries(sent));
  });

  it('label names of every family are upstream\'s', () => {
    const e = afterWorkload;
    assert.deepEqual(labelNameSets(e, 'apiserver_request_total'), ['code,component,dry_run,group,resource,scope,subresource,verb,version']);
    assert.deepEqual(labelNameSets(e, 'apiserver_request_duration_seconds_bucket'), ['component,dry_run,group,resource,scope,subresource,verb,version']);
    for (const h of ['apiserver_request_sli_duration_seconds_bucket', 'apiserver_response_sizes_bucket', 'apiserver_longrunning_requests']) {
      assert.deepEqual(labelNameSets(e, h), [SLI_LABELS], h);
    }
    assert.deepEqual(labelNameSets(e, 'apiserver_watch_events_total'), ['group,kind,version']);
    assert.deepEqual(labelNameSets(e, 'apiserver_watch_events_sizes_bucket'), ['group,kind,version']);
    assert.deepEqual(labelNameSets(e, 'apiserver_current_inflight_requests'), ['request_kind']);
    assert.deepEqual(labelNameSets(e, 'apiserver_storage_objects'), ['resource']);
    assert.equal(e.types.get('apiserver_request_total'), 'counter');
    assert.equal(e.types.get('apiserver_longrunning_requests'), 'gauge');
    // 1.33 hides the SLO histogram (deprecated in 1.27) and has no apiserver_resource_objects yet (1.34).
    assert.equal(select(e, 'apiserver_request_slo_duration_seconds_count').length, 0);
  });

  it('histograms have upstream\'s buckets and one observation per counted request', () => {
    const e = afterWorkload;
    assert.deepEqual(bucketBounds(e, 'apiserver_request_duration_seconds'), DURATION_LE);
    assert.deepEqual(bucketBounds(e, 'apiserver_request_sli_duration_seconds'), SLI_LE);
    assert.deepEqual(bucketBounds(e, 'apiserver_response_sizes'), RESPONSE_SIZE_LE);
    assert.deepEqual(bucketBounds(e, 'apiserver_watch_events_sizes'), WATCH_SIZE_LE);
    const requests = total(e, 'apiserver_request_total');
    assert.equal(total(e, 'apiserver_request_duration_seconds_count'), requests);
    assert.equal(total(e, 'apiserver_request_sli_duration_seconds_count'), requests);
    for (const s of select(e, 'apiserver_request_sli_duration_seconds_count')) {
      const { verb, scope, subresource, component } = s.labels;
      assert.equal(s.value, total(e, 'apiserver_request_total', { verb, scope, subresource, component }), JSON.stringify(s.labels));
    }
  });

  it('apiserver_response_sizes: GET and LIST routes only, the body bytes written (a ?watch=true stream included)', () => {
    const e = afterWorkload;
    const bytes = (k: string) => (bodies.get(k) ?? []).reduce((n, b) => n + Buffer.byteLength(b), 0);
    const sizes = (verb: string, scope: string, component = 'apiserver') => ({
      count: total(e, 'apiserver_response_sizes_count', { verb, scope, component }),
      sum: total(e, 'apiserver_response_sizes_sum', { verb, scope, component }),
    });
    assert.deepEqual(sizes('LIST', 'namespace'), { count: 3, sum: bytes('LIST/namespace/') }); // 2 × 200, the 504
    assert.deepEqual(sizes('LIST', 'cluster'), { count: 1, sum: bytes('LIST/cluster/') });
    assert.deepEqual(sizes('GET', 'resource'), { count: 3, sum: bytes('GET/resource/') });
    assert.deepEqual(sizes('GET', '', ''), { count: 1, sum: 2 }); // "ok"
    // The ?watch=true stream went through the LIST route; the legacy /watch/ route is WATCHLIST (no size).
    const stream = watchLines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
    assert.deepEqual(sizes('WATCH', 'namespace'), { count: 1, sum: stream });
    for (const verb of ['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE']) assert.equal(select(e, 'apiserver_response_sizes_count', { verb }).length, 0, verb);
  });

  it('apiserver_watch_events_total/_sizes: every event sent, sized by its embedded object', () => {
    const e = afterWorkload;
    const kind = { group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' };
    const objects = watchLines.map((l) => l.slice(l.indexOf('"object":') + '"object":'.length, -1));
    // Both watches (the legacy one replayed the same history from the same resourceVersion).
    const legacyEvents = total(e, 'apiserver_watch_events_total', kind) - watchLines.length;
    assert.equal(legacyEvents, watchLines.length);
    assert.equal(total(e, 'apiserver_watch_events_sizes_count', kind), 2 * watchLines.length);
    assert.equal(total(e, 'apiserver_watch_events_sizes_sum', kind), 2 * objects.reduce((n, o) => n + Buffer.byteLength(o), 0));
  });

  it('apiserver_storage_objects: the llamas stored', async () => {
    const items = (await ts.request('GET', coll)).json<{ items: unknown[] }>().items.length;
    const e = await scrape();
    assert.equal(total(e, 'apiserver_storage_objects', { resource: 'llamas.farm.example.com' }), items);
    assert.equal(items, ts.stores.get('llamas')!.view.size);
    assert.equal(items, 3); // a, d, f
  });

  it('the mixin\'s read/write SLI rules (kube_apiserver-burnrate.libsonnet) evaluate over these series in promtool', { timeout: 20 * 60_000 }, async () => {
    await checkMixinSli(afterWorkload);
  });
  it('(the workload above had reads and writes for the rules to see)', () => {
    assert.ok(total(afterWorkload, 'apiserver_request_total', { verb: 'LIST' }) > 0 && total(afterWorkload, 'apiserver_request_total', { verb: 'POST' }) > 0);
  });
});

describe('/metrics authorization', () => {
  it('is a non-resource "get /metrics" for the authorizer; denied means 403', async () => {
    const asked: RequestInfo[] = [];
    const token = 'metrics-reader';
    const ts = await startTestServer({
      metrics: createMetrics({ defaultMetrics: false }),
      auth: {
        authenticators: [tokenAuthenticator(token)], rejectAnonymous: true,
        authorizer: { authorize: async (_user, info) => { asked.push(info); return { allowed: false, reason: 'no RBAC' }; } },
      },
    });
    try {
      const r = await ts.request('GET', '/metrics', { token });
      assert.equal(r.status, 403);
      assert.match(r.body, /cannot get path \\?"\/metrics\\?"/);
      assert.deepEqual(asked.map((i) => ({ isResourceRequest: i.isResourceRequest, verb: i.verb, path: i.path })), [{ isResourceRequest: false, verb: 'get', path: '/metrics' }]);
    } finally { await ts.close(); }
  });
});

// The kubernetes-mixin's SLI selectors (rules/kube_apiserver-config.libsonnet) with only the job changed.
const JOB = 'job="farm-apiserver"';
const READ = 'verb=~"LIST|GET"';
const WRITE = 'verb=~"POST|PUT|PATCH|DELETE"';
const NON_STREAMING = 'subresource!~"proxy|attach|log|exec|portforward"';
const WINDOWS = ['5m', '30m', '1h', '2h'];

/** rules/kube_apiserver-burnrate.libsonnet, rendered for JOB and clusterLabel "cluster". */
function burnrateRules(): { record: string; expr: string; labels: { verb: string } }[] {
  return WINDOWS.flatMap((w) => [{
    record: `apiserver_request:burnrate${w}`, labels: { verb: 'read' },
    expr: `(
  (
    # too slow
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_count{${JOB},${READ},${NON_STREAMING}}[${w}]))
    -
    (
      (
        sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope=~"resource|",le=~"1(\\\\.0)?"}[${w}]))
        or
        vector(0)
      )
      +
      sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope="namespace",le=~"5(\\\\.0)?"}[${w}]))
      +
      sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope="cluster",le=~"30(\\\\.0)?"}[${w}]))
    )
  )
  +
  # errors
  sum by (cluster) (rate(apiserver_request_total{${JOB},${READ},code=~"5.."}[${w}]))
)
/
sum by (cluster) (rate(apiserver_request_total{${JOB},${READ}}[${w}]))`,
  }, {
    record: `apiserver_request:burnrate${w}`, labels: { verb: 'write' },
    expr: `(
  (
    # too slow
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_count{${JOB},${WRITE},${NON_STREAMING}}[${w}]))
    -
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${WRITE},${NON_STREAMING},le=~"1(\\\\.0)?"}[${w}]))
  )
  +
  sum by (cluster) (rate(apiserver_request_total{${JOB},${WRITE},code=~"5.."}[${w}]))
)
/
sum by (cluster) (rate(apiserver_request_total{${JOB},${WRITE}}[${w}]))`,
  }]);
}

const list0RV = (r: { json<T>(): T }) => r.json<{ metadata: { resourceVersion: string } }>().metadata.resourceVersion;
const quote = (v: string) => JSON.stringify(v);
const seriesName = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries({ ...labels, job: 'farm-apiserver', instance: '127.0.0.1:8443' }).map(([k, v]) => `${k}=${quote(v)}`).join(',')}}`;

/**
 * Replays the scraped counters as series growing by their scraped value each minute (so each rate is
 * value/60 per second), then has promtool evaluate the mixin's burn-rate rules and, piece by piece,
 * the sums they are made of. The expected numbers come from the scrape; Prometheus does the matching.
 */
async function checkMixinSli(e: Exposition): Promise<void> {
  const { stdout } = await promisify(execFile)('bash', [join(import.meta.dirname, '../../scripts/promtool-bin.sh')], { timeout: 15 * 60_000 });
  const promtool = stdout.trim();
  const families = ['apiserver_request_total', 'apiserver_request_sli_duration_seconds_bucket', 'apiserver_request_sli_duration_seconds_count'];
  const input = e.samples.filter((s) => families.includes(s.name) && s.value > 0)
    .map((s) => ({ series: seriesName(s.name, s.labels), values: `0+${s.value}x200` }));
  const sumOf = (name: string, match: (l: Record<string, string>) => boolean) =>
    e.samples.filter((s) => s.name === name && match(s.labels)).reduce((n, s) => n + s.value, 0);
  const isRead = (l: Record<string, string>) => l.verb === 'LIST' || l.verb === 'GET';
  const isWrite = (l: Record<string, string>) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(l.verb);
  const nonStreaming = (l: Record<string, string>) => !['proxy', 'attach', 'log', 'exec', 'portforward'].includes(l.subresource);
  const sli = 'apiserver_request_sli_duration_seconds';
  const pieces: { expr: string; value: number }[] = [
    { expr: `sum(rate(apiserver_request_total{${JOB},${READ}}[5m]))`, value: sumOf('apiserver_request_total', isRead) },
    { expr: `sum(rate(apiserver_request_total{${JOB},${WRITE}}[5m]))`, value: sumOf('apiserver_request_total', isWrite) },
    { expr: `sum(rate(${sli}_count{${JOB},${READ},${NON_STREAMING}}[5m]))`, value: sumOf(`${sli}_count`, (l) => isRead(l) && nonStreaming(l)) },
    { expr: `sum(rate(${sli}_bucket{${JOB},${READ},${NON_STREAMING},scope=~"resource|",le=~"1(\\\\.0)?"}[5m]))`, value: sumOf(`${sli}_bucket`, (l) => isRead(l) && (l.scope === 'resource' || l.scope === '') && l.le === '1') },
    { expr: `sum(rate(${sli}_bucket{${JOB},${READ},${NON_STREAMING},scope="namespace",le=~"5(\\\\.0)?"}[5m]))`, value: sumOf(`${sli}_bucket`, (l) => isRead(l) && l.scope === 'namespace' && l.le === '5') },
    { expr: `sum(rate(${sli}_bucket{${JOB},${READ},${NON_STREAMING},scope="cluster",le=~"30(\\\\.0)?"}[5m]))`, value: sumOf(`${sli}_bucket`, (l) => isRead(l) && l.scope === 'cluster' && l.le === '30') },
    { expr: `sum(rate(${sli}_bucket{${JOB},${WRITE},${NON_STREAMING},le=~"1(\\\\.0)?"}[5m]))`, value: sumOf(`${sli}_bucket`, (l) => isWrite(l) && l.le === '1') },
  ];
  for (const p of pieces) assert.ok(p.value > 0, `the workload feeds ${p.expr}`);
  // Every counted request was fast and none failed with 5xx: no budget burnt.
  const slow = (kind: (l: Record<string, string>) => boolean, fast: number) => sumOf(`${sli}_count`, kind) - fast;
  const round = (v: number) => Math.floor(v * 2 ** 20 + 0.5) / 2 ** 20; // PromQL round(v, 2^-20)
  const readBurn = (slow(isRead, pieces[3].value + pieces[4].value + pieces[5].value) + sumOf('apiserver_request_total', (l) => isRead(l) && l.code.startsWith('5'))) / pieces[0].value;
  const writeErrors = sumOf('apiserver_request_total', (l) => isWrite(l) && l.code.startsWith('5'));
  const writeBurn = (slow(isWrite, pieces[6].value) + writeErrors) / pieces[1].value;
  assert.ok(readBurn > 0, 'the workload has a failed read, so the read burn rate is not 0');
  const evalTime = '3h';
  const test = {
    rule_files: ['rules.yaml'],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: input,
      promql_expr_test: [
        // Rates are value/60; rounding keeps float noise out of the exact comparison promtool makes.
        ...pieces.map((p) => ({ expr: `round(60 * ${p.expr}, 2^-20)`, eval_time: evalTime, exp_samples: [{ labels: '{}', value: p.value }] })),
        ...WINDOWS.map((w) => ({
          expr: `round(apiserver_request:burnrate${w}, 2^-20)`, eval_time: evalTime,
          // The write rule adds the rate of 5xx writes: with none ever answered there is no such series and
          // the rule records nothing (kube-apiserver's metrics behave the same until a write fails).
          exp_samples: [{ labels: '{verb="read"}', value: round(readBurn) }, ...(writeErrors > 0 ? [{ labels: '{verb="write"}', value: round(writeBurn) }] : [])],
        })),
      ],
    }],
  };
  const rules = { groups: [{ name: 'kube-apiserver-burnrate.rules', rules: burnrateRules() }] };
  const dir = await mkdtemp(join(tmpdir(), 'farm-promtool-'));
  try {
    // JSON is YAML: no YAML writer needed, and the expressions travel unchanged.
    await writeFile(join(dir, 'rules.yaml'), JSON.stringify(rules, null, 1));
    await writeFile(join(dir, 'test.yaml'), JSON.stringify(test, null, 1));
    const run = await promisify(execFile)(promtool, ['test', 'rules', 'test.yaml'], { cwd: dir, timeout: 120_000 }).catch((err: { stdout?: string; stderr?: string }) => err);
    assert.match(`${run.stdout ?? ''}${run.stderr ?? ''}`, /SUCCESS/, `promtool test rules:\n${run.stdout ?? ''}${run.stderr ?? ''}`);
  } finally { await rm(dir, { recursive: true, force: true }); }
}
