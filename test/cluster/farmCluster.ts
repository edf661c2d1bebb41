// A local cluster with farm-apiserver registered behind the real aggregator: the control plane,
// app.yaml's RBAC, our server in cluster mode (as its ServiceAccount), and the APIService with the
// real caBundle pointing at localhost. `npm run cluster` and the e2e tests both use it. With
// `storage: 'etcd3'` our servers keep llamas in an etcd of their own; with `replicas: N` (etcd3
// only) N of them serve behind a TCP round-robin balancer, as a Service in front of a Deployment.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { renderManifests } from '../../scripts/manifests.js';
import { ensureDevCerts } from '../../src/certs/devCerts.js';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';
import { startEtcd, type TestEtcd } from '../helpers/etcd.js';
import { freePort, startControlPlane, type ControlPlane } from './controlPlane.js';
import { startTcpBalancer, type TcpBalancer } from './tcpBalancer.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface FarmReplica {
  port: number;
  log: string;
  readonly running: boolean;
  /** SIGTERM (a rollout) or SIGKILL (a crash); resolves once it exited. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on its port; resolves once /readyz is 200. */
  start(): Promise<void>;
}

export interface FarmCluster {
  cp: ControlPlane;
  /** Where the APIService sends requests on 127.0.0.1: our server's port, or the balancer's with several replicas. */
  farmPort: number;
  farmCertDir: string;
  /** The first replica's log. */
  farmLog: string;
  replicas: FarmReplica[];
  /** Our servers' own etcd (storage 'etcd3'). */
  etcd?: TestEtcd;
  /** Runs real kubectl with an isolated HOME. */
  kubectl(args: string[], opts?: { kubeconfig?: string; input?: string; timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Restarts our server (e.g. to check it recovers state from nothing but the cluster). */
  restartFarm(): Promise<void>;
  stop(): Promise<void>;
}

export interface FarmClusterOptions {
  dir: string;
  withControllerManager?: boolean;
  log?: (l: string) => void;
  farmArgs?: string[];
  /** More kube-apiserver flags. */
  apiserverArgs?: string[];
  /** Where our servers keep llamas (default memory). */
  storage?: 'memory' | 'etcd3';
  /** How many of our servers (default 1; more than one needs etcd3, one truth). */
  replicas?: number;
  /** A built entry point to run (e.g. the bundle `npm start` runs) instead of `tsx src/main.ts`. */
  main?: string;
  /** The node binary our servers run on (default this process's). */
  node?: string;
}

/** Why these replica options cannot work, or undefined (checked before anything starts). */
export function replicasProblem(replicas: number, storage: string): string | undefined {
  if (!(Number.isInteger(replicas) && replicas >= 1 && replicas <= 16)) return `--replicas: want a whole number from 1 to 16, got ${replicas}`;
  if (storage !== 'memory' && storage !== 'etcd3') return `--storage-backend: want memory or etcd3, got ${storage}`;
  if (replicas > 1 && storage !== 'etcd3') return '--replicas above 1 needs --storage-backend etcd3 (in-memory replicas would each hold different llamas)';
  return undefined;
}

export async function startFarmCluster(opts: FarmClusterOptions): Promise<FarmCluster> {
  const log = opts.log ?? (() => {});
  const dir = resolve(opts.dir);
  const replicaCount = opts.replicas ?? 1;
  const problem = replicasProblem(replicaCount, opts.storage ?? 'memory');
  if (problem) throw new Error(problem);
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  const cp = await startControlPlane({ dir: join(dir, 'cp'), withControllerManager: opts.withControllerManager, log, apiserverArgs: opts.apiserverArgs });

  const kubectl: FarmCluster['kubectl'] = (args, o = {}) => new Promise((res) => {
    const child = execFile('kubectl', ['--kubeconfig', o.kubeconfig ?? cp.adminKubeconfig, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home }, timeout: o.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024,
    }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      res({ code, stdout, stderr });
    });
    if (o.input !== undefined) child.stdin?.end(o.input);
  });
  const must = async (args: string[], input?: string) => {
    const r = await kubectl(args, { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  };

  const farmCertDir = join(dir, 'farm-certs');
  await ensureDevCerts(farmCertDir);
  const farmPort = await freePort();
  const docs = parseAllDocuments(renderManifests({ certDir: farmCertDir, localPort: farmPort })).map((d) => d.toJSON() as { kind: string });
  const apiService = docs.filter((d) => d.kind === 'APIService');
  const rest = docs.filter((d) => d.kind !== 'APIService');
  await must(['apply', '-f', '-'], rest.map((d) => stringify(d)).join('---\n'));

  // Our server authenticates to kube-apiserver as its ServiceAccount, so app.yaml's RBAC is what is tested.
  const token = (await must(['-n', 'farm-system', 'create', 'token', 'farm-apiserver', '--duration=24h'])).trim();
  const saKubeconfig = join(dir, 'farm-apiserver-sa.kubeconfig');
  await writeKubeconfig(saKubeconfig, { server: cp.apiserverUrl, caPem: readFileSync(cp.clusterCa, 'utf8'), token });

  const etcd = opts.storage === 'etcd3' ? await startEtcd() : undefined;
  const storageArgs = etcd ? ['--storage-backend', 'etcd3', '--etcd-servers', etcd.url] : [];
  const replicas: FarmReplica[] = [];
  for (let i = 0; i < replicaCount; i++) {
    const port = replicaCount === 1 ? farmPort : await freePort();
    const replicaLog = join(dir, replicaCount === 1 ? 'farm-apiserver.log' : `farm-apiserver-${i}.log`);
    let farm: ChildProcess | undefined;
    replicas.push({
      port, log: replicaLog,
      get running() { return farm !== undefined && farm.exitCode === null && farm.signalCode === null; },
      async start() {
        const out = openSync(replicaLog, 'a');
        farm = spawn(opts.node ?? process.execPath, [...(opts.main ? [opts.main] : ['--import', 'tsx', join(REPO, 'src/main.ts')]),
          '--kubeconfig', saKubeconfig, '--port', String(port), '--bind-address', '127.0.0.1',
          '--cert-dir', farmCertDir, '--log-level', 'info', ...storageArgs, ...(opts.farmArgs ?? [])],
        // No compile cache: each test bundle's path is new, its entries would pile up in the real /tmp.
        { cwd: REPO, stdio: ['ignore', out, out], env: { ...process.env, KUBERNETES_SERVICE_HOST: '', NODE_DISABLE_COMPILE_CACHE: '1' } });
        await waitFor(`farm-apiserver /readyz on ${port}`, 60_000, async () => (await httpsStatus(port, '/readyz', farmCertDir)) === 200);
        log(`farm-apiserver ready on https://127.0.0.1:${port}`);
      },
      async stop(signal = 'SIGTERM') {
        const f = farm;
        farm = undefined;
        if (!f || f.exitCode !== null || f.signalCode !== null) return;
        const exited = new Promise((r) => f.once('exit', r));
        f.kill(signal);
        await Promise.race([exited, new Promise((r) => setTimeout(r, 8000))]);
        if (f.exitCode === null && f.signalCode === null) f.kill('SIGKILL');
      },
    });
  }
  const farmLog = replicas[0].log;
  // One replica listens on farmPort itself (benchmarks find its process by port); several sit behind a balancer there.
  const balancer: TcpBalancer | undefined = replicaCount > 1
    ? await startTcpBalancer(() => replicas.filter((r) => r.running).map((r) => r.port), farmPort) : undefined;
  const startFarm = async () => { await Promise.all(replicas.map((r) => r.start())); };
  const stopFarm = async () => { await Promise.all(replicas.map((r) => r.stop())); };
  const stopAll = async () => {
    await stopFarm();
    await balancer?.close();
    await etcd?.stop();
    await cp.stop();
  };

  try {
    await startFarm();
    await must(['apply', '-f', '-'], apiService.map((d) => stringify(d)).join('---\n'));
    await must(['wait', '--for=condition=Available', 'apiservice/v1alpha.farm.example.com', '--timeout=120s']);
    log('APIService v1alpha.farm.example.com is Available');
    copyFileSync(cp.adminKubeconfig, join(dir, 'admin.kubeconfig'));
  } catch (e) {
    await stopAll();
    throw new Error(`${(e as Error).message}\n--- farm-apiserver log (tail) ---\n${tail(farmLog)}`);
  }

  return {
    cp, farmPort, farmCertDir, farmLog, kubectl, replicas, ...(etcd && { etcd }),
    async restartFarm() { await stopFarm(); await startFarm(); },
    stop: stopAll,
  };
}

function tail(file: string): string {
  try { return readFileSync(file, 'utf8').split('\n').slice(-40).join('\n'); } catch { return '(no log)'; }
}

function httpsStatus(port: number, path: string, certDir: string): Promise<number> {
  return new Promise((res) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', ca: readFileSync(join(certDir, 'ca.crt')), timeout: 2000 }, (r) => { r.resume(); res(r.statusCode ?? 0); });
    req.on('error', () => res(0));
    req.on('timeout', () => { req.destroy(); res(0); });
    req.end();
  });
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}
