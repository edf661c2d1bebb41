// npm run cluster: a local control plane with farm-apiserver registered behind the aggregator.
// Prints the admin kubeconfig; Ctrl-C / SIGTERM tears everything down.
import { join } from 'node:path';
import { startFarmCluster } from '../test/cluster/farmCluster.js';

const dir = join(process.cwd(), '.cluster');
const log = (l: string) => process.stdout.write(`[cluster] ${l}\n`);
const cluster = await startFarmCluster({ dir, withControllerManager: true, log });
const admin = join(dir, 'admin.kubeconfig');
process.stdout.write(`\nReady. farm-apiserver is registered behind kube-apiserver ${cluster.cp.apiserverUrl}\n` +
  `  export KUBECONFIG=${admin}\n  kubectl get apiservice v1alpha.farm.example.com\n  kubectl get llamas\n` +
  `farm-apiserver log: ${cluster.farmLog}\nCtrl-C to stop.\n`);
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
