// A real Kubernetes control plane for e2e tests: etcd + kube-apiserver (+ optionally
// kube-controller-manager) as local processes on loopback ports, with the aggregation layer on.
// Binaries are built from Go modules by scripts/cluster-bins.sh (see test/cluster/README.md).
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { openSync, closeSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from 'selfsigned';
import { freePort } from '../../scripts/freePort.js';

export type KubeUser = 'admin' | 'farm-apiserver' | 'alice';

export interface ClientCert {
  /** PEM file paths */
  cert: string;
  key: string;
}

export interface ControlPlane {
  dir: string;
  /** https://127.0.0.1:<port> */
  apiserverUrl: string;
  /** cluster CA file (signs the apiserver serving cert and all client certs) */
  clusterCa: string;
  adminKubeconfig: string;
  kubeconfigFor(user: KubeUser): string;
  /** client cert/key files per user (admin: O=system:masters, alice: O=testers) */
  clientCert(user: KubeUser): ClientCert;
  /** front-proxy CA and the aggregator's client cert (CN=front-proxy-client) */
  frontProxy: { ca: string; clientCert: string; clientKey: string };
  /** binary cache dir used */
  binDir: string;
  /** kube-controller-manager secure port, when started */
  controllerManagerPort?: number;
  /**
   * Stops kube-apiserver only and starts it again on the same port and etcd; waits for /readyz.
   * Default: SIGTERM, then SIGKILL after 5 s (open watches, e.g. from the controller manager, make
   * its graceful shutdown hang, so expect ~7 s). `hard: true` SIGKILLs at once (a crash, ~3 s).
   */
  restartApiserver(opts?: { hard?: boolean }): Promise<void>;
  /** Kills every child (SIGTERM, then SIGKILL after a grace period). Idempotent. */
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** working dir for certs, kubeconfigs, etcd data and logs (created if missing) */
  dir: string;
  withControllerManager?: boolean;
  log?: (line: string) => void;
  /** readiness timeout per component, ms (default 90 s) */
  readyTimeoutMs?: number;
  /** More kube-apiserver flags (e.g. --tracing-config-file). */
  apiserverArgs?: string[];
}

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BINS_SCRIPT = join(REPO, 'scripts/cluster-bins.sh');

/** Runs scripts/cluster-bins.sh (a no-op when warm; builds from Go modules when cold) and returns the bin dir. */
export async function ensureClusterBinaries(log: (l: string) => void = () => {}): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn('bash', [BINS_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      for (const l of d.toString().split('\n')) if (l.trim()) log(l);
    });
    child.on('error', rej);
    child.on('close', (code) => {
      const dir = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !dir) {
        rej(new Error(`scripts/cluster-bins.sh failed (exit ${code}); the real-cluster tests cannot run:\n${tail(err, 40)}`));
      } else res(dir);
    });
  });
}

// ---------- certificates ----------

interface Pem { cert: string; key: string }

const TEN_YEARS = 3650 * 864e5;

async function makeCa(cn: string): Promise<Pem> {
  const r = await generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec', algorithm: 'sha256',
    notBeforeDate: new Date(Date.now() - 3600e3), notAfterDate: new Date(Date.now() + TEN_YEARS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: r.cert, key: r.private };
}

async function makeLeaf(ca: Pem, cn: string, org: string[], kind: 'client' | 'server'): Promise<Pem> {
  const attrs = [{ name: 'commonName', value: cn }, ...org.map((o) => ({ name: 'organizationName', value: o }))];
  const r = await generate(attrs, {
    keyType: 'ec', algorithm: 'sha256', ca: { cert: ca.cert, key: ca.key },
    notBeforeDate: new Date(Date.now() - 3600e3), notAfterDate: new Date(Date.now() + TEN_YEARS),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      kind === 'server' ? { name: 'extKeyUsage', serverAuth: true } : { name: 'extKeyUsage', clientAuth: true },
      ...(kind === 'server'
        ? [{ name: 'subjectAltName' as const, altNames: [
            { type: 2 as const, value: 'localhost' }, { type: 2 as const, value: 'kubernetes.default.svc' },
            { type: 7 as const, ip: '127.0.0.1' }, { type: 7 as const, ip: '10.0.0.1' }] }]
        : []),
    ],
  });
  return { cert: r.cert, key: r.private };
}

interface Files {
  ca: string; caKey: string;
  serving: ClientCert;
  users: Record<KubeUser | 'kube-controller-manager', ClientCert>;
  frontProxyCa: string; frontProxyClient: ClientCert;
  saKey: string; saPub: string;
}

async function writeCerts(dir: string): Promise<Files> {
  const pki = join(dir, 'pki');
  mkdirSync(pki, { recursive: true });
  const put = (name: string, pem: Pem): ClientCert => {
    const cert = join(pki, `${name}.crt`);
    const key = join(pki, `${name}.key`);
    writeFileSync(cert, pem.cert);
    writeFileSync(key, pem.key, { mode: 0o600 });
    return { cert, key };
  };
  const ca = await makeCa('farm-test-cluster-ca');
  const caFiles = put('ca', ca);
  const fpCa = await makeCa('farm-test-front-proxy-ca');
  const fpFiles = put('front-proxy-ca', fpCa);
  const [serving, admin, farm, alice, kcm, fpClient] = await Promise.all([
    makeLeaf(ca, 'kube-apiserver', [], 'server'),
    makeLeaf(ca, 'admin', ['system:masters'], 'client'),
    makeLeaf(ca, 'farm-apiserver', [], 'client'),
    makeLeaf(ca, 'alice', ['testers'], 'client'),
    // superuser: with --use-service-account-credentials=false every controller runs as this identity
    makeLeaf(ca, 'system:kube-controller-manager', ['system:masters'], 'client'),
    makeLeaf(fpCa, 'front-proxy-client', [], 'client'),
  ]);
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const saKey = join(pki, 'sa.key');
  const saPub = join(pki, 'sa.pub');
  writeFileSync(saKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(saPub, sa.publicKey.export({ type: 'spki', format: 'pem' }));
  return {
    ca: caFiles.cert, caKey: caFiles.key,
    serving: put('apiserver', serving),
    users: {
      admin: put('admin', admin), 'farm-apiserver': put('farm-apiserver', farm),
      alice: put('alice', alice), 'kube-controller-manager': put('kube-controller-manager', kcm),
    },
    frontProxyCa: fpFiles.cert, frontProxyClient: put('front-proxy-client', fpClient),
    saKey, saPub,
  };
}

function writeKubeconfig(path: string, server: string, caFile: string, user: string, cc: ClientCert): void {
  const b64 = (f: string) => readFileSync(f).toString('base64');
  writeFileSync(path, [
    'apiVersion: v1', 'kind: Config',
    'clusters:', '- name: farm-test', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(caFile)}`,
    'users:', `- name: ${user}`, '  user:', `    client-certificate-data: ${b64(cc.cert)}`, `    client-key-data: ${b64(cc.key)}`,
    'contexts:', `- name: ${user}@farm-test`, '  context:', '    cluster: farm-test', `    user: ${user}`,
    `current-context: ${user}@farm-test`, '',
  ].join('\n'), { mode: 0o600 });
}

// ---------- processes ----------

export { freePort };

function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines - 1).join('\n');
}

function fileTail(path: string, lines = 40): string {
  try { return tail(readFileSync(path, 'utf8'), lines); } catch { return '(no log)'; }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every live child of every control plane in this process, killed synchronously on exit. */
const liveChildren = new Set<ChildProcess>();
let exitHooksInstalled = false;
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  const killAll = () => { for (const c of liveChildren) { try { c.kill('SIGKILL'); } catch { /* gone */ } } };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAll();
      // re-raise with the default behaviour, unless someone else handles it
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

class Proc {
  child?: ChildProcess;
  exited?: Promise<void>;
  spawnError?: Error;
  constructor(readonly name: string, readonly bin: string, readonly args: string[], readonly logFile: string,
    private readonly onChange: () => void) {}

  start(): void {
    const fd = openSync(this.logFile, 'a');
    const child = spawn(this.bin, this.args, { stdio: ['ignore', fd, fd], env: { ...process.env } });
    closeSync(fd);
    this.child = child;
    liveChildren.add(child);
    this.spawnError = undefined;
    this.exited = new Promise((res) => {
      const done = () => { liveChildren.delete(child); this.onChange(); res(); };
      child.once('exit', done);
      child.once('error', (e) => { this.spawnError = e; done(); });
    });
    this.onChange();
  }

  get running(): boolean {
    return !!this.child && !this.spawnError && this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(graceMs = 5000): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    if (graceMs <= 0) child.kill('SIGKILL');
    else child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.max(graceMs, 0));
    await this.exited;
    clearTimeout(timer);
  }

  failure(): Error {
    if (this.spawnError) return new Error(`${this.name}: cannot start ${this.bin}: ${this.spawnError.message}`);
    return new Error(`${this.name} failed to become ready (exit code ${this.child?.exitCode}, signal ${this.child?.signalCode}); last lines of ${this.logFile}:\n${fileTail(this.logFile)}`);
  }
}

interface HttpsTarget { ca?: string; cert?: string; key?: string; insecure?: boolean }

function httpsGet(url: string, t: HttpsTarget): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(url, {
      ca: t.ca ? readFileSync(t.ca) : undefined,
      cert: t.cert ? readFileSync(t.cert) : undefined,
      key: t.key ? readFileSync(t.key) : undefined,
      rejectUnauthorized: !t.insecure,
      timeout: 5000,
    }, (r) => {
      let body = '';
      r.on('data', (d: Buffer) => (body += d.toString()));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end();
  });
}

async function waitHealthy(p: Proc, url: string, t: HttpsTarget, timeoutMs: number, log: (l: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (!p.running) throw p.failure();
    try {
      const r = await httpsGet(url, t);
      if (r.status === 200) return;
      last = `HTTP ${r.status}: ${r.body.slice(0, 500)}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(250);
  }
  log(`${p.name}: last readiness answer: ${last}`);
  const err = p.failure();
  err.message = err.message.replace('failed to become ready', `not ready after ${timeoutMs} ms (last: ${last})`);
  throw err;
}

async function waitEtcd(p: Proc, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!p.running) throw p.failure();
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok && ((await r.json()) as { health?: string }).health === 'true') return;
    } catch { /* not listening yet */ }
    await sleep(200);
  }
  throw p.failure();
}

/** Kills the children if this Node process dies without running its exit hooks (e.g. SIGKILL). */
function startWatchdog(dir: string, pidFile: string): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
[ -f "$1" ] || exit 0
for p in $(cat "$1"); do grep -qaF -- "$2" /proc/$p/cmdline 2>/dev/null && kill -9 $p; done
exit 0`;
  const w = spawn('bash', ['-c', script, 'farm-cluster-watchdog', pidFile, dir], { detached: true, stdio: 'ignore' });
  w.unref();
  return w;
}

// ---------- the control plane ----------

export async function startControlPlane(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const dir = resolve(opts.dir);
  const log = opts.log ?? (() => {});
  const timeout = opts.readyTimeoutMs ?? 90_000;
  mkdirSync(dir, { recursive: true });
  installExitHooks();

  const binDir = await ensureClusterBinaries(log);
  for (const b of ['etcd', 'kube-apiserver', ...(opts.withControllerManager ? ['kube-controller-manager'] : [])]) {
    if (!existsSync(join(binDir, b))) throw new Error(`missing binary ${join(binDir, b)} after scripts/cluster-bins.sh`);
  }

  const f = await writeCerts(dir);
  const [etcdClient, etcdPeer, apiPort, kcmPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const apiserverUrl = `https://127.0.0.1:${apiPort}`;
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;

  const procs: Proc[] = [];
  const pidFile = join(dir, 'pids');
  const writePids = () => writeFileSync(pidFile, procs.filter((p) => p.running).map((p) => String(p.child?.pid)).join('\n') + '\n');
  const watchdog = startWatchdog(dir, pidFile);
  const mk = (name: string, args: string[]) => {
    const p = new Proc(name, join(binDir, name), args, join(dir, `${name}.log`), writePids);
    procs.push(p);
    return p;
  };

  const etcd = mk('etcd', [
    '--name=default', `--data-dir=${join(dir, 'etcd-data')}`,
    `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
    '--unsafe-no-fsync', '--log-level=warn',
  ]);

  const apiserver = mk('kube-apiserver', [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1', `--secure-port=${apiPort}`,
    '--endpoint-reconciler-type=none', `--cert-dir=${join(dir, 'pki')}`,
    `--tls-cert-file=${f.serving.cert}`, `--tls-private-key-file=${f.serving.key}`,
    `--client-ca-file=${f.ca}`,
    '--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${f.saPub}`, `--service-account-signing-key-file=${f.saKey}`,
    // aggregation layer
    `--requestheader-client-ca-file=${f.frontProxyCa}`, '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${f.frontProxyClient.cert}`, `--proxy-client-key-file=${f.frontProxyClient.key}`,
    '--v=1',
    ...(opts.apiserverArgs ?? []),
  ]);

  const kcmKubeconfig = join(dir, 'kube-controller-manager.kubeconfig');
  const kcm = opts.withControllerManager ? mk('kube-controller-manager', [
    `--kubeconfig=${kcmKubeconfig}`,
    `--authentication-kubeconfig=${kcmKubeconfig}`, `--authorization-kubeconfig=${kcmKubeconfig}`,
    '--bind-address=127.0.0.1', `--secure-port=${kcmPort}`, `--cert-dir=${join(dir, 'kcm-certs')}`,
    '--leader-elect=false', '--use-service-account-credentials=false',
    '--controllers=namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller',
    `--service-account-private-key-file=${f.saKey}`, `--root-ca-file=${f.ca}`,
    '--v=1',
  ]) : undefined;

  const admin: HttpsTarget = { ca: f.ca, ...f.users.admin };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // reverse order: controller manager, apiserver, etcd
    for (const p of [...procs].reverse()) await p.stop();
    try { watchdog.kill('SIGKILL'); } catch { /* gone */ }
  };

  try {
    etcd.start();
    await waitEtcd(etcd, etcdUrl, timeout);
    log(`etcd ready at ${etcdUrl}`);
    apiserver.start();
    await waitHealthy(apiserver, `${apiserverUrl}/readyz`, admin, timeout, log);
    log(`kube-apiserver ready at ${apiserverUrl}`);

    const kubeconfigs = {} as Record<KubeUser, string>;
    for (const u of ['admin', 'farm-apiserver', 'alice'] as const) {
      kubeconfigs[u] = join(dir, `${u}.kubeconfig`);
      writeKubeconfig(kubeconfigs[u], apiserverUrl, f.ca, u, f.users[u]);
    }
    writeKubeconfig(kcmKubeconfig, apiserverUrl, f.ca, 'system:kube-controller-manager', f.users['kube-controller-manager']);

    if (kcm) {
      kcm.start();
      // its serving cert is self-signed in --cert-dir; /healthz is always allowed
      await waitHealthy(kcm, `https://127.0.0.1:${kcmPort}/healthz`, { insecure: true }, timeout, log);
      log(`kube-controller-manager healthy on port ${kcmPort}`);
    }

    return {
      dir, apiserverUrl, binDir, clusterCa: f.ca,
      adminKubeconfig: kubeconfigs.admin,
      kubeconfigFor: (u) => kubeconfigs[u],
      clientCert: (u) => ({ ...f.users[u] }),
      frontProxy: { ca: f.frontProxyCa, clientCert: f.frontProxyClient.cert, clientKey: f.frontProxyClient.key },
      controllerManagerPort: kcm ? kcmPort : undefined,
      async restartApiserver(o) {
        if (stopped) throw new Error('control plane is stopped');
        await apiserver.stop(o?.hard ? 0 : 5000);
        apiserver.start();
        await waitHealthy(apiserver, `${apiserverUrl}/readyz`, admin, timeout, log);
        log('kube-apiserver restarted');
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
