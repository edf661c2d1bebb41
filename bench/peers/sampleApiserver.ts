// kubernetes/sample-apiserver as a benchmark peer: built from Go modules by bench/peers/build.sh,
// run with its own etcd (the control plane's etcd binary, fresh data dir, loopback ports) and
// delegating authentication/authorization to the e2e control plane, like our server in cluster mode.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from 'selfsigned';
import { freePort, nowMs, sleep } from '../lib/common.js';
import { hasTaskset } from './procStat.js';

const BUILD_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'build.sh');

/** The APIService our peer is registered as, and the Service it points at (its name is the TLS server name). */
export const WARDLE = { group: 'wardle.example.com', version: 'v1alpha1', namespace: 'wardle', service: 'api' } as const;

/** Runs bench/peers/build.sh (a no-op when the binary is cached) and returns the dir holding sample-apiserver. */
export function ensurePeerBinaries(log: (l: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); for (const l of d.toString().split('\n')) if (l.trim()) log(l); });
    child.on('error', reject);
    child.on('close', (code) => {
      const dir = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !dir) reject(new Error(`bench/peers/build.sh failed (exit ${code}):\n${err.slice(-3000)}`));
      else resolve(dir);
    });
  });
}

export interface ServingCert { ca: string; cert: string; key: string }

/** A CA and a serving certificate for localhost, 127.0.0.1 and the Service's DNS name (what the aggregator dials). */
export async function writeServingCert(dir: string): Promise<ServingCert> {
  mkdirSync(dir, { recursive: true });
  const tenYears = new Date(Date.now() + 3650 * 864e5);
  const yesterday = new Date(Date.now() - 864e5);
  const ca = await generate([{ name: 'commonName', value: 'sample-apiserver-bench-ca' }], {
    keyType: 'ec', algorithm: 'sha256', notBeforeDate: yesterday, notAfterDate: tenYears,
    extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }],
  });
  const svc = `${WARDLE.service}.${WARDLE.namespace}.svc`;
  const leaf = await generate([{ name: 'commonName', value: svc }], {
    keyType: 'ec', algorithm: 'sha256', notBeforeDate: yesterday, notAfterDate: tenYears, ca: { cert: ca.cert, key: ca.private },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 2, value: svc }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
  writeFileSync(files.ca, ca.cert);
  writeFileSync(files.cert, leaf.cert);
  writeFileSync(files.key, leaf.private, { mode: 0o600 });
  return files;
}

/** A child process of ours, killed when this process exits. */
export class Spawned {
  readonly exited: Promise<void>;
  constructor(readonly name: string, readonly proc: ChildProcess, readonly logFile: string) {
    this.exited = new Promise((r) => { proc.once('exit', () => r()); proc.once('error', () => r()); });
    const kill = () => { try { proc.kill('SIGKILL'); } catch { /* gone */ } };
    process.once('exit', kill);
    void this.exited.then(() => process.off('exit', kill));
  }

  get pid(): number { return this.proc.pid ?? -1; }
  get running(): boolean { return this.proc.exitCode === null && this.proc.signalCode === null; }

  /** The last lines of its log, for error messages. */
  tail(lines = 30): string {
    try { return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n'); } catch { return '(no log)'; }
  }

  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(t);
  }
}

/** Spawns `bin args` with its output in `logFile`, under `taskset -c cpus` when given (taskset execs: same pid). */
function spawnLogged(name: string, bin: string, args: string[], logFile: string, opts: { cpus?: string; env?: Record<string, string> } = {}): Spawned {
  const fd = openSync(logFile, 'a');
  const [cmd, argv] = opts.cpus && hasTaskset ? ['taskset', ['-c', opts.cpus, bin, ...args]] : [bin, args];
  const proc = spawn(cmd, argv, { stdio: ['ignore', fd, fd], env: { ...process.env, ...opts.env } });
  closeSync(fd);
  return new Spawned(name, proc, logFile);
}

export async function startEtcd(etcdBin: string, dir: string, cpus?: string): Promise<{ etcd: Spawned; url: string }> {
  mkdirSync(dir, { recursive: true });
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const etcd = spawnLogged('etcd (sample-apiserver)', etcdBin, [
    '--name=default', `--data-dir=${join(dir, 'data')}`,
    `--listen-client-urls=${url}`, `--advertise-client-urls=${url}`,
    `--listen-peer-urls=http://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-cluster=default=http://127.0.0.1:${peer}`,
    // as the control plane's etcd (test/cluster/controlPlane.ts)
    '--unsafe-no-fsync', '--log-level=warn',
  ], join(dir, 'etcd.log'), { cpus });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (!etcd.running) throw new Error(`etcd exited:\n${etcd.tail()}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok && ((await r.json()) as { health?: string }).health === 'true') return { etcd, url };
    } catch { /* not listening yet */ }
    await sleep(100);
  }
  await etcd.stop();
  throw new Error(`etcd not healthy within 30 s:\n${etcd.tail()}`);
}

export interface SampleOptions {
  bin: string; dir: string; etcdUrl: string; kubeconfig: string; serving: ServingCert; cpus?: string;
  /** GOMAXPROCS for the Go runtime (1 when pinned to one core). */
  gomaxprocs?: number;
}

/** HTTP status of GET path with a client certificate; 0 when there is no answer. */
export function statusWithCert(port: number, path: string, ca: string, cert: string, key: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key), servername: 'localhost', agent: false, timeout: 2000 }, (r) => {
      r.resume();
      r.on('end', () => resolve(r.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/**
 * Starts sample-apiserver on a free loopback port. Flags: what peers.md found necessary, nothing
 * tuned — the defaults of a generic apiserver (watch cache on, APF on, admission chain with
 * NamespaceLifecycle and BanFlunder, JSON in etcd, no request logging below -v=3).
 * `ready` resolves when /readyz answers 200 to `probe` (a system:masters client certificate); its
 * value is the time from spawn, ms.
 */
export async function startSample(o: SampleOptions, probe: { cert: string; key: string }): Promise<{ server: Spawned; port: number; readyMs: number }> {
  mkdirSync(o.dir, { recursive: true });
  const port = await freePort();
  const t0 = nowMs();
  const server = spawnLogged('sample-apiserver', o.bin, [
    `--etcd-servers=${o.etcdUrl}`,
    '--bind-address=127.0.0.1', `--secure-port=${port}`,
    `--tls-cert-file=${o.serving.cert}`, `--tls-private-key-file=${o.serving.key}`, `--cert-dir=${join(o.dir, 'certs')}`,
    // informers (namespaces for NamespaceLifecycle, APF config, webhooks), TokenReview and SubjectAccessReview
    `--kubeconfig=${o.kubeconfig}`, `--authentication-kubeconfig=${o.kubeconfig}`, `--authorization-kubeconfig=${o.kubeconfig}`,
  ], join(o.dir, `sample-apiserver-${port}.log`), { cpus: o.cpus, env: o.gomaxprocs ? { GOMAXPROCS: String(o.gomaxprocs) } : {} });
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (!server.running) throw new Error(`sample-apiserver exited (${server.proc.exitCode}):\n${server.tail()}`);
    if ((await statusWithCert(port, '/readyz', o.serving.ca, probe.cert, probe.key)) === 200) return { server, port, readyMs: nowMs() - t0 };
    await sleep(5);
  }
  await server.stop();
  throw new Error(`sample-apiserver not ready within 90 s:\n${server.tail()}`);
}

/** The Service (ExternalName → localhost, as test/cluster/farmCluster.ts registers ours) and the APIService, as YAML. */
export function registrationYaml(port: number, caFile: string): string {
  const ca = readFileSync(caFile).toString('base64');
  return [
    `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${WARDLE.namespace}\n`,
    `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${WARDLE.service}\n  namespace: ${WARDLE.namespace}\nspec:\n  type: ExternalName\n  externalName: localhost\n  ports:\n  - name: https\n    port: ${port}\n`,
    `apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: ${WARDLE.version}.${WARDLE.group}\nspec:\n  group: ${WARDLE.group}\n  version: ${WARDLE.version}\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n  caBundle: ${ca}\n  service:\n    namespace: ${WARDLE.namespace}\n    name: ${WARDLE.service}\n    port: ${port}\n`,
  ].join('---\n');
}
