// npm run cluster [-- --replicas N] [--storage-backend memory|etcd3]: a local control plane with
// farm-apiserver registered behind the aggregator. Several replicas keep llamas in an etcd of their
// own (started here) behind a TCP round-robin balancer. Prints the admin kubeconfig; Ctrl-C / SIGTERM
// tears everything down.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { replicasProblem, startFarmCluster } from '../test/cluster/farmCluster.js';

function options(): { replicas: number; storage: 'memory' | 'etcd3' } {
  const { values } = parseArgs({ options: { replicas: { type: 'string' }, 'storage-backend': { type: 'string' } } });
  const replicas = Number(values.replicas ?? '1');
  const storage = values['storage-backend'] ?? (replicas > 1 ? 'etcd3' : 'memory');
  const problem = replicasProblem(replicas, storage);
  if (problem) throw new Error(problem);
  return { replicas, storage: storage as 'memory' | 'etcd3' };
}

let opts: ReturnType<typeof options>;
try {
  opts = options();
} catch (e) {
  process.stderr.write(`cluster: ${(e as Error).message}\n`);
  process.exit(2);
}
const dir = join(process.cwd(), '.cluster');
const log = (l: string) => process.stdout.write(`[cluster] ${l}\n`);
const cluster = await startFarmCluster({ dir, withControllerManager: true, log, replicas: opts.replicas, storage: opts.storage });
const admin = join(dir, 'admin.kubeconfig');
const servers = cluster.replicas.map((r) => `  https://127.0.0.1:${r.port} (log ${r.log})`).join('\n');
process.stdout.write(`\nReady. farm-apiserver is registered behind kube-apiserver ${cluster.cp.apiserverUrl}\n` +
  `  export KUBECONFIG=${admin}\n  kubectl get apiservice v1alpha.farm.example.com\n  kubectl get llamas\n` +
  `farm-apiserver (${opts.storage}${cluster.etcd ? ` on ${cluster.etcd.url}` : ''}), ${cluster.replicas.length} replica(s)` +
  `${cluster.replicas.length > 1 ? ` behind 127.0.0.1:${cluster.farmPort}` : ''}:\n${servers}\nCtrl-C to stop.\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  log('stopping');
  await cluster.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
