// A second farm-apiserver for the peer benchmark, started directly (not by test/cluster/farmCluster.ts):
// same command line as the cluster's (tsx src/main.ts, cluster mode, its ServiceAccount kubeconfig and
// serving certificate) plus extra flags, e.g. the etcd3 backend. It can take over the APIService
// v1alpha.farm.example.com (and give it back), so rows through the aggregator measure it too.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { renderManifests } from '../../scripts/manifests.js';
import { freePort, nowMs, REPO_DIR, sleep } from '../lib/common.js';
import { hasTaskset } from './procStat.js';
import { Spawned, statusWithCert } from './sampleApiserver.js';

export interface FarmDirectOptions {
  /** The cluster's files: ServiceAccount kubeconfig, serving certificate dir (ca.crt, tls.crt, tls.key). */
  kubeconfig: string; certDir: string;
  /** Flags after the cluster's (e.g. --storage-backend=etcd3 …). */
  extraArgs: string[];
  logFile: string;
  /** taskset CPU list. */
  cpus?: string;
  /** A system:masters client certificate for /readyz. */
  probe: { cert: string; key: string };
  /** Compiled JavaScript to run instead of tsx src/main.ts (start-to-ready). */
  compiledMain?: string;
  /** The node binary to run (default this process's). */
  node?: string;
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
}

/** Spawns our server on a free loopback port; resolves once /readyz answers 200, with ms from spawn. */
export async function startFarmDirect(o: FarmDirectOptions): Promise<{ server: Spawned; port: number; readyMs: number }> {
  const port = await freePort();
  const main = o.compiledMain ? [o.compiledMain] : ['--import', 'tsx', join(REPO_DIR, 'src/main.ts')];
  const args = [...main, '--kubeconfig', o.kubeconfig, '--port', String(port), '--bind-address', '127.0.0.1',
    '--cert-dir', o.certDir, '--log-level', 'info', ...o.extraArgs];
  const node = o.node ?? process.execPath;
  const [cmd, argv] = o.cpus && hasTaskset ? ['taskset', ['-c', o.cpus, node, ...args]] : [node, args];
  const fd = openSync(o.logFile, 'a');
  const t0 = nowMs();
  const proc = spawn(cmd, argv, { cwd: REPO_DIR, stdio: ['ignore', fd, fd], env: { ...process.env, ...o.env, KUBERNETES_SERVICE_HOST: '' } });
  closeSync(fd);
  const server = new Spawned('farm-apiserver (direct)', proc, o.logFile);
  const deadline = t0 + 90_000;
  while (nowMs() < deadline) {
    if (!server.running) throw new Error(`farm-apiserver exited (${proc.exitCode}):\n${server.tail()}`);
    if ((await statusWithCert(port, '/readyz', join(o.certDir, 'ca.crt'), o.probe.cert, o.probe.key)) === 200) return { server, port, readyMs: nowMs() - t0 };
    await sleep(5);
  }
  await server.stop();
  throw new Error(`farm-apiserver not ready within 90 s:\n${server.tail()}`);
}

/**
 * Points the Service and APIService of v1alpha.farm.example.com at `port` (both our instances share
 * one serving certificate, so the caBundle stays), then waits until a GET through the aggregator is
 * answered by that instance: `answeredBy` tells (e.g. by an object's uid). Bounded by `timeoutMs`.
 */
export async function routeAggregatorTo(o: {
  certDir: string; port: number;
  apply(yaml: string): Promise<void>;
  answeredBy(): Promise<boolean>;
  timeoutMs?: number;
}): Promise<number> {
  const t0 = nowMs();
  const docs = parseAllDocuments(renderManifests({ certDir: o.certDir, localPort: o.port }))
    .map((d) => d.toJSON() as { kind: string })
    .filter((d) => d.kind === 'Service' || d.kind === 'APIService');
  if (docs.length !== 2) throw new Error(`renderManifests gave ${docs.length} Service/APIService documents, want 2`);
  await o.apply(docs.map((d) => stringify(d)).join('---\n'));
  const deadline = t0 + (o.timeoutMs ?? 30_000);
  while (nowMs() < deadline) {
    if (await o.answeredBy().catch(() => false)) return nowMs() - t0;
    await sleep(50);
  }
  throw new Error(`the aggregator did not route v1alpha.farm.example.com to port ${o.port} within ${o.timeoutMs ?? 30_000} ms`);
}
