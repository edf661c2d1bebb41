// One trace from the client through kube-apiserver's aggregator into us, with both servers exporting
// to the same in-process OTLP receiver: kube-apiserver 1.33 with --tracing-config-file and ours.
// WithTracing trusts a traceparent only from system:masters and system:monitoring: for the admin
// the trace runs client → kube-apiserver → proxy → us → our SubjectAccessReview call; for anyone
// else each server starts its own trace and links it to the caller's span.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { bundleInto } from '../../scripts/bundle.js';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import type { KubeUser } from '../cluster/controlPlane.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.js';
import { eventually, https, type HttpsResult } from './e2e.helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-tracing-'));
// Ours runs the production bundle: the OTLP exporter is a package there, loaded beside bundled code.
const bundleRoot = join(import.meta.dirname, '..', '..', '.cache', `e2e-tracing-bundle-${process.pid}`);
let cluster: FarmCluster;
let receiver: OtlpReceiver;

const SERVER = 2;
const CLIENT = 3;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const NS = `traced-${hex(3)}`;
const LLAMAS = `/apis/farm.example.com/v1alpha/namespaces/${NS}/llamas`;

before(async () => {
  receiver = await startOtlpReceiver();
  const config = (rate: number) => {
    const file = join(tmp, `tracing-${rate}.yaml`);
    writeFileSync(file, `apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: ${receiver.endpoint}\nsamplingRatePerMillion: ${rate}\n`);
    return file;
  };
  // Every root is sampled on both, so an untrusted caller's new traces are exported too.
  cluster = await startFarmCluster({
    dir: join(tmp, 'cluster'),
    main: await bundleInto(bundleRoot),
    apiserverArgs: [`--tracing-config-file=${config(1_000_000)}`],
    farmArgs: ['--tracing-config-file', config(1_000_000)],
    log: (l) => console.log(`[cluster] ${l}`),
  });
  const must = async (args: string[]) => {
    const r = await cluster.kubectl(args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  };
  await must(['create', 'namespace', NS]);
  await must(['create', 'clusterrole', 'llama-reader', '--verb=get,list', '--resource=llamas.farm.example.com']);
  await must(['-n', NS, 'create', 'rolebinding', 'alice-reads-llamas', '--clusterrole=llama-reader', '--user=alice']);
}, { timeout: 15 * 60_000 });

after(async () => {
  await cluster?.stop();
  await receiver?.close();
  rmSync(bundleRoot, { recursive: true, force: true });
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
});

/** GET through kube-apiserver as `user`, with a sampled traceparent and our own Audit-ID to find our span by. */
async function tracedGet(user: KubeUser, traceId: string, parentId: string): Promise<HttpsResult & { auditId: string }> {
  const auditId = `tracing-e2e-${hex(8)}`;
  const cert = cluster.cp.clientCert(user);
  const res = await https({
    url: `${cluster.cp.apiserverUrl}${LLAMAS}`, ca: cluster.cp.clusterCa, cert: cert.cert, key: cert.key,
    headers: { traceparent: `00-${traceId}-${parentId}-01`, 'Audit-ID': auditId },
  });
  assert.equal(res.status, 200, res.body);
  return { ...res, auditId };
}

const service = (s: ReceivedSpan) => s.resource['service.name'];

/** Our server span of the request with this Audit-ID, once exported (batches go out every 5 s). */
function ourServerSpan(auditId: string): Promise<ReceivedSpan> {
  return eventually(`our server span with audit-id ${auditId}`, 30_000, async () =>
    receiver.spans.find((s) => service(s) === 'farm-apiserver' && s.kind === SERVER && s.attributes['audit-id'] === auditId), 200);
}

const spanById = (id: string) => receiver.spans.find((s) => s.spanId === id);

/** `span` and its exported ancestors up to the one whose parent is `stopAt` ('' = the trace's root), once all arrived. */
function ancestry(span: ReceivedSpan, stopAt: string): Promise<ReceivedSpan[]> {
  return eventually(`the spans from ${span.name} up to ${stopAt || 'the root'}`, 30_000, async () => {
    const chain = [span];
    for (let s = span; s.parentSpanId !== stopAt;) {
      const parent = spanById(s.parentSpanId);
      if (!parent) return undefined;
      chain.push(s = parent);
    }
    return chain;
  }, 200);
}

test('as admin (system:masters): one trace from the client through kube-apiserver\'s proxy into our span, and on into our SubjectAccessReview', async () => {
  const traceId = hex(16);
  const parentId = hex(8);
  const res = await tracedGet('admin', traceId, parentId);
  const ours = await ourServerSpan(res.auditId);
  assert.equal(ours.traceId, traceId, 'kube-apiserver\'s trace is continued, not a new one');
  assert.equal(ours.name, 'GET /apis/farm.example.com/v1alpha/namespaces/{:namespace}/llamas');
  assert.deepEqual(ours.links, []);
  const chain = await ancestry(ours, parentId);
  const above = chain.slice(1);
  assert.ok(above.length > 0 && above.every((s) => service(s) === 'apiserver'), `between the client and us only kube-apiserver: ${above.map((s) => `${service(s)}:${s.name}`).join(' < ')}`);
  const top = chain.at(-1)!;
  assert.equal(top.kind, SERVER, 'kube-apiserver\'s own server span is the client\'s child');
  assert.equal(chain[1].kind, CLIENT, 'our parent is kube-apiserver\'s proxy call');

  // system:masters is authorized without a SubjectAccessReview (AlwaysAllowGroups), so our span has
  // no review under it. One would have ended, and been exported, before our span.
  assert.deepEqual(receiver.spans.filter((s) => s.parentSpanId === ours.spanId && s.name === 'SubjectAccessReview'), []);
});

test('as alice (not privileged): kube-apiserver and we each start a new trace linked to the caller\'s span', async () => {
  const traceId = hex(16);
  const parentId = hex(8);
  const res = await tracedGet('alice', traceId, parentId);
  const ours = await ourServerSpan(res.auditId);
  assert.equal(ours.parentSpanId, '');
  assert.equal(ours.links.length, 1);
  const [link] = ours.links;
  assert.notEqual(link.traceId, traceId);
  // The linked span is kube-apiserver's proxy call, in the trace kube-apiserver started for alice,
  // whose root links to the client's span.
  const proxied = await eventually('kube-apiserver\'s proxy span', 30_000, async () => spanById(link.spanId), 200);
  assert.equal(service(proxied), 'apiserver');
  assert.equal(proxied.kind, CLIENT);
  const root = (await ancestry(proxied, '')).at(-1)!;
  assert.deepEqual(root.links, [{ traceId, spanId: parentId }]);

  // The delegated authorization call: our span, our client span, and kube-apiserver's answer to it.
  // Our ServiceAccount is not privileged either, so kube-apiserver starts a trace linked to our call.
  const review = await eventually('our SubjectAccessReview span', 30_000, async () =>
    receiver.spans.find((s) => s.traceId === ours.traceId && s.name === 'SubjectAccessReview' && s.parentSpanId === ours.spanId), 200);
  const call = await eventually('our HTTP POST under it', 30_000, async () =>
    receiver.spans.find((s) => s.parentSpanId === review.spanId && s.kind === CLIENT), 200);
  assert.equal(call.name, 'HTTP POST');
  const answer = await eventually('kube-apiserver\'s span for the review', 30_000, async () =>
    receiver.spans.find((s) => service(s) === 'apiserver' && s.links.some((l) => l.spanId === call.spanId)), 200);
  assert.equal(answer.parentSpanId, '');
  assert.deepEqual(answer.links, [{ traceId: ours.traceId, spanId: call.spanId }]);
  assert.match(answer.name, /subjectaccessreviews/);

  assert.equal(receiver.spans.filter((s) => s.traceId === traceId).length, 0, 'nobody joined the caller\'s trace');
  assert.notEqual(ours.traceId, proxied.traceId);
});
