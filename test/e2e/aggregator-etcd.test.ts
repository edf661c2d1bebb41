// The aggregator scenarios with the etcd3 backend and two replicas behind a balancer (issue 10): the
// real kube-apiserver (+ kube-controller-manager) proxies to whichever replica its connection reached;
// CRUD, watch, namespace deletion and garbage collection work, a replica's crash costs nothing but a
// reconnect, and a restart of every replica keeps every llama. The replicas run the production
// bundle (scripts/bundle.ts, what `npm start` and the image run), so it is tested in cluster mode.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleInto } from '../../scripts/bundle.js';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { eventually, https, llama, spawnKubectl } from './e2e.helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-etcd-'));
// Inside the repository, where the packages the bundle keeps (the etcd client) resolve.
const bundleRoot = join(import.meta.dirname, '..', '..', '.cache', `e2e-bundle-${process.pid}`);
let cluster: FarmCluster;
const GV = '/apis/farm.example.com/v1alpha';

before(async () => {
  const main = await bundleInto(bundleRoot);
  cluster = await startFarmCluster({ dir: tmp, withControllerManager: true, storage: 'etcd3', replicas: 2, main, log: (l) => console.log(`[cluster] ${l}`) });
}, { timeout: 15 * 60_000 });

after(async () => {
  await cluster?.stop();
  rmSync(bundleRoot, { recursive: true, force: true });
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
});

async function k(args: string[], input?: string): Promise<string> {
  const r = await cluster.kubectl(args, { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/** One replica directly, as kube's admin (a client certificate our server trusts through the cluster's client CA). */
function direct(i: number, path: string) {
  const admin = cluster.cp.clientCert('admin');
  return https({ url: `https://127.0.0.1:${cluster.replicas[i].port}${path}`, ca: join(cluster.farmCertDir, 'ca.crt'), cert: admin.cert, key: admin.key });
}

interface Llama { metadata: { name: string; uid: string; resourceVersion: string }; spec: { weight: number } }
/** The resourceVersion of the first write, long behind the replicas' caches by the last test. */
let firstRV = '';

test('two replicas on one etcd: the APIService is Available and both serve the same llamas at the same resourceVersions', async () => {
  assert.equal(cluster.replicas.length, 2);
  await k(['wait', '--for=condition=Available', 'apiservice/v1alpha.farm.example.com', '--timeout=60s']);
  const made = JSON.parse(await k(['create', '-o', 'json', '-f', '-'], JSON.stringify(llama('shared', 'default')))) as Llama;
  firstRV = made.metadata.resourceVersion;
  for (const i of [0, 1]) {
    const r = await direct(i, `${GV}/namespaces/default/llamas/shared`);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.metadata.uid, made.metadata.uid);
    assert.equal(r.json.metadata.resourceVersion, made.metadata.resourceVersion);
  }
});

test('kubectl create, get, patch, apply, watch and delete through the aggregator', async () => {
  const home = join(tmp, 'home');
  const watch = spawnKubectl(['get', 'llamas', '-n', 'default', '-w', '--output-watch-events'], { kubeconfig: cluster.cp.adminKubeconfig, home });
  try {
    await watch.waitFor(/ADDED\s+shared\s/, 30_000);
    await k(['create', '-f', '-'], JSON.stringify(llama('bessie', 'default', { spec: { weight: 90, height: 1.7 } })));
    assert.match(await k(['get', 'llama', 'bessie', '-n', 'default']), /bessie/);
    await k(['patch', 'llama', 'bessie', '-n', 'default', '--type=merge', '-p', '{"spec":{"weight":95}}']);
    await k(['apply', '-f', '-'], JSON.stringify(llama('bessie', 'default', { spec: { weight: 96, height: 1.7 } })));
    const got = JSON.parse(await k(['get', 'llama', 'bessie', '-n', 'default', '-o', 'json'])) as Llama;
    assert.equal(got.spec.weight, 96);
    await k(['delete', 'llama', 'bessie', '-n', 'default']);
    await watch.waitFor(/ADDED\s+bessie\s[\s\S]*MODIFIED\s+bessie\s[\s\S]*DELETED\s+bessie\s/, 30_000);
  } finally {
    await watch.stop();
  }
});

test('each replica in turn is SIGKILLed: kubectl keeps working through the other, with every llama', async () => {
  for (const n of ['k1', 'k2', 'k3']) await k(['create', '-f', '-'], JSON.stringify(llama(n, 'default')));
  const before = (await k(['get', 'llamas', '-n', 'default', '-o', 'name'])).trim().split('\n').sort();
  // One of the two holds kube-apiserver's connection: killing each in turn kills that one once.
  for (const [dead, alive] of [[0, 1], [1, 0]]) {
    await cluster.replicas[dead].stop('SIGKILL');
    try {
      // kube-apiserver notices its connection broke and dials the Service again (the balancer → the live one).
      const names = await eventually(`kubectl get llamas with replica ${dead} down`, 60_000, async () => {
        const r = await cluster.kubectl(['get', 'llamas', '-n', 'default', '-o', 'name']);
        return r.code === 0 ? r.stdout.trim().split('\n').sort() : undefined;
      }, 500);
      assert.deepEqual(names.filter((n) => before.includes(n)), before);
      await k(['create', '-f', '-'], JSON.stringify(llama(`while-${dead}-down`, 'default')));
    } finally {
      await cluster.replicas[dead].start();
    }
    const r = await direct(dead, `${GV}/namespaces/default/llamas/while-${dead}-down`);
    assert.equal(r.status, 200, `replica ${dead}, restarted, reads what replica ${alive} wrote meanwhile: ${r.body}`);
  }
});

test('deleting a namespace that holds llamas completes within 60 s (the namespace controller deletes them through us)', async () => {
  await k(['create', 'namespace', 'pasture']);
  for (const n of ['a', 'b', 'c']) await k(['create', '-f', '-'], JSON.stringify(llama(n, 'pasture')));
  await k(['delete', 'namespace', 'pasture', '--wait=false']);
  const w = await cluster.kubectl(['wait', '--for=delete', 'namespace/pasture', '--timeout=60s'], { timeoutMs: 70_000 });
  assert.equal(w.code, 0, w.stderr);
  for (const i of [0, 1]) assert.deepEqual((await direct(i, `${GV}/namespaces/pasture/llamas`)).json.items, []);
});

test('a llama owned by a ConfigMap is garbage collected after the ConfigMap is deleted', async () => {
  const cm = JSON.parse(await k(['create', 'configmap', 'owner', '-n', 'default', '-o', 'json'])) as { metadata: { uid: string } };
  await k(['create', '-f', '-'], JSON.stringify(llama('owned', 'default', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: cm.metadata.uid }] })));
  await k(['delete', 'configmap', 'owner', '-n', 'default']);
  await eventually('the garbage collector to delete llama owned', 60_000, async () =>
    (await direct(1, `${GV}/namespaces/default/llamas/owned`)).status === 404, 500);
});

test('every replica restarted: every llama is still there with its uid and resourceVersion; a watch from before gets 410 Expired', async () => {
  const list = async () => (JSON.parse(await k(['get', 'llamas', '-A', '-o', 'json'])) as { items: Llama[] }).items
    .map((l) => `${l.metadata.name} ${l.metadata.uid} ${l.metadata.resourceVersion}`).sort();
  const before = await list();
  assert.ok(before.length >= 5, before.join('\n'));
  await cluster.restartFarm();
  const after = await eventually('the aggregator to reach the restarted replicas', 60_000, async () => {
    const r = await cluster.kubectl(['get', 'llamas', '-A', '-o', 'json']);
    return r.code === 0 ? r.stdout : undefined;
  }, 500);
  assert.deepEqual((JSON.parse(after) as { items: Llama[] }).items.map((l) => `${l.metadata.name} ${l.metadata.uid} ${l.metadata.resourceVersion}`).sort(), before);
  // A watch resumed from an RV before the restarts is older than the restarted caches: 410 Expired,
  // and kubectl's list (what a client does next) already shows the converged state above.
  const stale = await cluster.kubectl(['get', '--raw', `${GV}/namespaces/default/llamas?watch=1&resourceVersion=${firstRV}`], { timeoutMs: 20_000 });
  const first = JSON.parse(stale.stdout.split('\n')[0] ?? '{}') as { type?: string; object?: { code?: number; reason?: string } };
  assert.deepEqual([first.type, first.object?.code, first.object?.reason], ['ERROR', 410, 'Expired'], `${stale.stdout}\n${stale.stderr}`);
  // The log says where llamas are kept.
  assert.match(readFileSync(cluster.replicas[0].log, 'utf8'), /"msg":"storage: etcd3"/);
  // stdout and stderr share each replica's log: only JSON records, no runtime warning about the
  // bundled code (Node 22+ warns for its own punycode required from outside node_modules).
  for (const replica of cluster.replicas) {
    const stray = readFileSync(replica.log, 'utf8').split('\n').filter((l) => l !== '' && !isJsonRecord(l));
    assert.deepEqual(stray, [], `${replica.log} has lines that are not JSON log records`);
  }
});

function isJsonRecord(line: string): boolean {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null;
  } catch {
    return false;
  }
}
