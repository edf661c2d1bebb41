// /metrics: the exposition format, requests counted by verb/resource/code (also those refused
// before routing and watches a client abandons), bounded labels, and Upstream's onCall hook.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics, METRICS_CONTENT_TYPE } from '../../src/server/observability/metrics.js';
import { Upstream } from '../../src/upstream/client.js';
import { samples } from '../helpers/metrics.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

describe('metrics', () => {
  let ts: TestServer;
  const metrics = createMetrics();
  const scrape = async () => {
    const r = await ts.request('GET', '/metrics');
    assert.equal(r.status, 200, r.body);
    return r.body;
  };
  const http = async (labels: string) => samples(await scrape(), 'farm_http_requests_total').get(labels) ?? 0;
  const createLlama = async (name: string) => {
    const body = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 1, height: 1 } };
    const r = await ts.request('POST', '/apis/farm.example.com/v1alpha/namespaces/default/llamas', { body });
    assert.equal(r.status, 201, r.body);
  };

  before(async () => { ts = await startTestServer({ metrics }); });
  after(async () => { await ts?.close(); });

  it('GET /metrics speaks the Prometheus text format 0.0.4 with our families and the default Node ones', async () => {
    const r = await ts.request('GET', '/metrics');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    assert.equal(METRICS_CONTENT_TYPE, 'text/plain; version=0.0.4; charset=utf-8');
    for (const line of [
      '# TYPE farm_upstream_requests_total counter', '# TYPE farm_http_requests_total counter',
      '# TYPE process_cpu_user_seconds_total counter', '# TYPE nodejs_heap_size_used_bytes gauge', '# TYPE process_start_time_seconds gauge',
    ]) assert.ok(r.body.includes(line), `missing ${line}`);
  });

  it('needs authentication like any path (standalone: the token)', async () => {
    const r = await ts.request('GET', '/metrics', { token: null });
    assert.equal(r.status, 401);
  });

  it('counts requests by verb, resource and code, including ones refused before routing', async () => {
    const before = {
      list: await http('{verb="list",resource="llamas",code="200"}'),
      notFound: await http('{verb="get",resource="llamas",code="404"}'),
      unauth: await http('{verb="list",resource="llamas",code="401"}'),
      created: await http('{verb="create",resource="llamas",code="201"}'),
    };
    for (let i = 0; i < 3; i++) assert.equal((await ts.request('GET', '/apis/farm.example.com/v1alpha/namespaces/default/llamas')).status, 200);
    assert.equal((await ts.request('GET', '/apis/farm.example.com/v1alpha/namespaces/default/llamas/nope')).status, 404);
    assert.equal((await ts.request('GET', '/apis/farm.example.com/v1alpha/namespaces/default/llamas', { token: 'wrong' })).status, 401);
    await createLlama('counted');
    assert.equal(await http('{verb="list",resource="llamas",code="200"}'), before.list + 3);
    assert.equal(await http('{verb="get",resource="llamas",code="404"}'), before.notFound + 1);
    assert.equal(await http('{verb="list",resource="llamas",code="401"}'), before.unauth + 1);
    assert.equal(await http('{verb="create",resource="llamas",code="201"}'), before.created + 1);
  });

  it('counts a watch once its client goes away', async () => {
    const labels = '{verb="watch",resource="llamas",code="200"}';
    await createLlama('watched'); // so the watch has an initial event to read
    const n = await http(labels);
    const s = await ts.stream('/apis/farm.example.com/v1alpha/namespaces/default/llamas?watch=true');
    assert.equal(s.status, 200);
    await s.next();
    s.close();
    const deadline = Date.now() + 5000;
    while ((await http(labels)) !== n + 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await http(labels), n + 1);
  });

  it('keeps labels bounded: resources not served and non-resource paths', async () => {
    const text0 = await scrape();
    const other0 = samples(text0, 'farm_http_requests_total').get('{verb="get",resource="other",code="404"}') ?? 0;
    for (const junk of ['made-up-1', 'made-up-2', 'made-up-3']) {
      assert.equal((await ts.request('GET', `/apis/farm.example.com/v1alpha/namespaces/default/${junk}/x`)).status, 404);
    }
    const text = await scrape();
    assert.equal(samples(text, 'farm_http_requests_total').get('{verb="get",resource="other",code="404"}'), other0 + 3);
    assert.equal(text.includes('made-up'), false);
    assert.ok((samples(text, 'farm_http_requests_total').get('{verb="get",resource="",code="200"}') ?? 0) >= 1, 'GET /metrics itself is a non-resource get');
  });

  it('Upstream reports every call to onCall, which feeds farm_upstream_requests_total{purpose}', async () => {
    const m = createMetrics({ defaultMetrics: false });
    const up = await Upstream.load({ kubeconfig: ts.kubeconfig, inCluster: false, onCall: (purpose) => m.upstreamRequests.inc({ purpose }) });
    for (let i = 0; i < 2; i++) assert.equal((await up.request('probe', 'GET', '/apis/farm.example.com/v1alpha/namespaces/default/llamas')).status, 200);
    await createLlama('upstream-watched'); // the watch below stops at its first (initial) event
    const ac = new AbortController();
    const watching = up.watch('pods', '/apis/farm.example.com/v1alpha/namespaces/default/llamas?watch=true', () => ac.abort(), ac.signal);
    await watching;
    const text = await m.registry.metrics();
    assert.deepEqual([...samples(text, 'farm_upstream_requests_total')], [['{purpose="probe"}', 2], ['{purpose="pods"}', 1]]);
    assert.deepEqual([...up.calls], [['probe', 2], ['pods', 1]]);
    assert.equal(text.includes('process_cpu'), false, 'defaultMetrics: false leaves the Node metrics out');
  });
});
