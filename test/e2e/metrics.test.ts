// kube-apiserver's apiserver_* metrics through the real aggregator: real kubectl runs a workload on
// llamas, the cluster's admin (client certificate, SubjectAccessReview-free as system:masters)
// scrapes our /metrics, and the request counts and labels must match the verbs kubectl sent. The
// real kube-apiserver 1.33's own /metrics is the oracle for label names and buckets.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { bucketBounds, labelNameSets, parseExposition, select, type Exposition } from '../helpers/exposition.js';

const NS = 'metrics-e2e';
const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-metrics-'));
let cluster: FarmCluster;

before(async () => {
  cluster = await startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`) });
  await must(['create', 'namespace', NS]);
}, { timeout: 20 * 60_000 });

after(async () => {
  await cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function must(args: string[], input?: string): Promise<string> {
  const r = await cluster.kubectl(args, { input, timeoutMs: 60_000 });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Our /metrics, as the cluster's admin authenticates to it (a client certificate of the cluster CA). */
function scrapeFarm(): Promise<Exposition> {
  const admin = cluster.cp.clientCert('admin');
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`https://127.0.0.1:${cluster.farmPort}/metrics`, {
      ca: readFileSync(join(cluster.farmCertDir, 'ca.crt')), cert: readFileSync(admin.cert), key: readFileSync(admin.key), agent: false, timeout: 10_000,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => { body += c; });
      res.on('end', () => (res.statusCode === 200 ? resolve(parseExposition(body)) : reject(new Error(`/metrics: ${res.statusCode} ${body}`))));
    });
    req.on('timeout', () => req.destroy(new Error('/metrics: timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** apiserver_request_total of llamas by "VERB scope code" (the labels a namespaced workload reaches). */
function llamaRequests(e: Exposition): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of select(e, 'apiserver_request_total', { group: 'farm.example.com', version: 'v1alpha', resource: 'llamas', component: 'apiserver', dry_run: '' })) {
    if (s.labels.scope === 'cluster') continue; // kube-controller-manager's metadata informers list and watch across namespaces
    const k = `${s.labels.verb} ${s.labels.scope} ${s.labels.code}${s.labels.subresource ? ` /${s.labels.subresource}` : ''}`;
    out.set(k, (out.get(k) ?? 0) + s.value);
  }
  return out;
}

const llama = (name: string, weight: number) => stringify({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, namespace: NS }, spec: { weight, height: 1.2 } });

test('a kubectl workload through the aggregator is counted by verb, scope and code as kube-apiserver counts it', { timeout: 5 * 60_000 }, async () => {
  const before = llamaRequests(await scrapeFarm());
  await must(['create', '-f', '-'], llama('a', 80)); // POST 201
  assert.notEqual((await cluster.kubectl(['create', '-f', '-'], { input: llama('a', 80) })).code, 0); // POST 409
  await must(['get', 'llamas', '-n', NS, '-o', 'name']); // LIST
  await must(['get', 'llama', 'a', '-n', NS, '-o', 'json']); // GET
  assert.notEqual((await cluster.kubectl(['get', 'llama', 'nope', '-n', NS])).code, 0); // GET 404
  await must(['patch', 'llama', 'a', '-n', NS, '--type', 'merge', '-p', '{"spec":{"weight":81}}']); // PATCH
  await must(['apply', '--server-side', '--force-conflicts', '--field-manager', 'metrics-e2e', '-f', '-'], llama('a', 82)); // APPLY
  await must(['replace', '-f', '-'], llama('a', 83)); // PUT (no resourceVersion: unconditional)
  await must(['create', '--dry-run=server', '-f', '-'], llama('b', 80)); // POST dry_run=All (not in this map)
  await must(['patch', 'llama', 'a', '-n', NS, '--subresource', 'status', '--type', 'merge', '-p', '{"status":{"observedGeneration":1}}']); // PATCH /status
  // A watch that ends (kubectl's own timeout): LIST then WATCH.
  await cluster.kubectl(['get', 'llamas', '-n', NS, '--watch', '--request-timeout', '2s']);
  await must(['delete', 'llama', 'a', '-n', NS, '--wait=false']); // DELETE

  // kubectl reads the object itself before some writes (patch, patch --subresource status, ...): the
  // GETs beyond `get llama a` are its own (2 on llamas/a, 1 on llamas/a/status), counted as sent.
  const want: Record<string, number> = {
    'POST resource 201': 1, 'POST resource 409': 1, 'LIST namespace 200': 2, 'GET resource 200': 3, 'GET resource 200 /status': 1, 'GET resource 404': 1,
    'PATCH resource 200': 1, 'APPLY resource 200': 1, 'PUT resource 200': 1, 'PATCH resource 200 /status': 1,
    'WATCH namespace 200': 1, 'DELETE resource 200': 1,
  };
  let delta: Record<string, number> = {};
  // The aggregator may still be finishing the watch's stream when kubectl exits: counted at its end.
  for (let i = 0; i < 50; i++) {
    const now = llamaRequests(await scrapeFarm());
    delta = Object.fromEntries([...now].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => v !== 0));
    if ((delta['WATCH namespace 200'] ?? 0) >= 1) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.deepEqual(delta, want);
  const e = await scrapeFarm();
  assert.equal(select(e, 'apiserver_request_total', { verb: 'POST', dry_run: 'All', code: '201', resource: 'llamas' }).reduce((n, s) => n + s.value, 0), 1);
});

test('label names and buckets equal the real kube-apiserver 1.33\'s own /metrics', async () => {
  // A watch that gets an event, so our watch and long-running families have series.
  const watching = cluster.kubectl(['get', 'llamas', '-n', NS, '--watch', '--request-timeout', '4s']);
  await new Promise((r) => setTimeout(r, 1500));
  await must(['create', '-f', '-'], llama('w', 80));
  const watched = await watching;
  assert.match(watched.stdout, /\bw\b/, `the watch saw llama w: ${watched.stdout} ${watched.stderr}`);
  const ours = await scrapeFarm();
  const kube = parseExposition(await must(['get', '--raw', '/metrics']));
  const families = ['apiserver_request_total', 'apiserver_request_duration_seconds_bucket', 'apiserver_request_sli_duration_seconds_bucket',
    'apiserver_response_sizes_bucket', 'apiserver_longrunning_requests', 'apiserver_watch_events_total', 'apiserver_watch_events_sizes_bucket',
    'apiserver_current_inflight_requests', 'apiserver_storage_objects'];
  for (const f of families) {
    assert.ok(select(kube, f).length > 0, `kube-apiserver has ${f}`);
    assert.deepEqual(labelNameSets(ours, f), labelNameSets(kube, f), f);
  }
  for (const h of ['apiserver_request_duration_seconds', 'apiserver_request_sli_duration_seconds', 'apiserver_response_sizes', 'apiserver_watch_events_sizes']) {
    assert.deepEqual(bucketBounds(ours, h), bucketBounds(kube, h), h);
  }
  for (const f of ['apiserver_request_total', 'apiserver_longrunning_requests', 'apiserver_current_inflight_requests', 'apiserver_storage_objects']) {
    assert.equal(ours.help.get(f), kube.help.get(f), `HELP ${f}`);
  }
  // Neither emits the deprecated SLO histogram nor (before 1.34) apiserver_resource_objects.
  for (const f of ['apiserver_request_slo_duration_seconds_count', 'apiserver_resource_objects']) {
    assert.equal(select(kube, f).length, 0, `kube-apiserver 1.33 has no ${f}`);
    assert.equal(select(ours, f).length, 0, f);
  }
});
