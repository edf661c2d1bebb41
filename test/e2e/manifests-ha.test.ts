// The HA variant (`npm run -s manifests -- --ha`): rendered by the real command, accepted by a real
// kube-apiserver 1.33 (server dry run), shaped as HA needs, and its etcd really runs: the rendered
// StatefulSet's etcd arguments and Secrets start a 3-member etcd (peer and client TLS) on loopback, and
// farm-apiserver's rendered client Secret connects to it, while a client without a certificate is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { startControlPlane, ensureClusterBinaries, freePort, type ControlPlane } from '../cluster/controlPlane.js';
import { kubectl } from '../helpers/kubectl.js';
import { connectEtcd, type EtcdClient } from '../../src/storage/etcd3/client.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-ha-'));
const certDir = join(tmp, 'certs');
const home = join(tmp, 'home');
mkdirSync(home);

// ---------- the rendered documents, typed as far as these checks read them ----------

interface Container {
  name: string; image: string; args?: string[]; command?: string[];
  env?: Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  readinessProbe?: Probe; livenessProbe?: Probe; startupProbe?: Probe;
}
interface Probe { httpGet?: { path: string; port: string | number; scheme?: string }; periodSeconds?: number; failureThreshold?: number; timeoutSeconds?: number }
interface PodSpec {
  containers: Container[];
  volumes?: Array<{ name: string; secret?: { secretName: string } }>;
  affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: Array<{ weight: number; podAffinityTerm: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } } }> } };
}
interface Doc {
  apiVersion: string; kind: string; type?: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number; serviceName?: string; clusterIP?: string; publishNotReadyAddresses?: boolean; podManagementPolicy?: string;
    minAvailable?: number | string; maxUnavailable?: number | string;
    selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
    strategy?: { type: string; rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string } };
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: Array<{ metadata: { name: string }; spec: { accessModes: string[]; resources: { requests: { storage: string } } } }>;
  };
}

function parseDocs(yaml: string): Doc[] {
  const parsed = parseAllDocuments(yaml);
  assert.deepEqual(parsed.flatMap((d) => d.errors), []);
  return parsed.map((d) => d.toJSON() as Doc);
}

function find(docs: Doc[], kind: string, name: string): Doc {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(d, `no ${kind} ${name} in the render: ${docs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return d;
}

const podSpec = (d: Doc): PodSpec => { assert.ok(d.spec?.template, `${d.kind}/${d.metadata.name} has no pod template`); return d.spec.template.spec; };
const container = (d: Doc, name: string): Container => {
  const c = podSpec(d).containers.find((x) => x.name === name);
  assert.ok(c, `${d.kind}/${d.metadata.name} has no container ${name}`);
  return c;
};
/** The value of `--flag=value` in args (exactly one occurrence). */
function flag(args: string[] | undefined, name: string): string {
  const hits = (args ?? []).filter((a) => a.startsWith(`${name}=`));
  assert.equal(hits.length, 1, `${name} given ${hits.length} times in ${JSON.stringify(args)}`);
  return hits[0]!.slice(name.length + 1);
}

/** Runs the real command (scripts/manifests.ts) as npm would. */
function renderCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/manifests.ts', ...args], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: home }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); rej(new Error(`manifests ${args.join(' ')} did not finish in 60 s:\n${stderr}`)); }, 60_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('exit', (code) => { clearTimeout(timer); res({ code, stdout, stderr }); });
  });
}

let cp: ControlPlane;
let haYaml: string;
let docs: Doc[];

before(async () => {
  const r = await renderCli(['--cert-dir', certDir, '--ha']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  haYaml = r.stdout;
  docs = parseDocs(haYaml);
  cp = await startControlPlane({ dir: join(tmp, 'cluster'), log: (l) => console.log(`[cp] ${l}`) });
}, { timeout: 40 * 60_000 }); // a cold build of the binaries takes a while

after(async () => {
  await cp?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cp] kept ${tmp}`);
});

test('the HA render passes kubectl apply --dry-run=server, every document', async () => {
  // A dry run creates nothing, so the namespaced objects need farm-system to exist already (NamespaceLifecycle).
  const ns = await kubectl(['create', 'namespace', 'farm-system'], { kubeconfig: cp.adminKubeconfig, home });
  assert.equal(ns.code, 0, ns.stderr);
  const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], { kubeconfig: cp.adminKubeconfig, home, input: haYaml, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, docs.length, r.stdout);
  for (const l of lines) assert.match(l, /\(server dry run\)$/);
  for (const want of ['deployment.apps/farm-apiserver', 'statefulset.apps/etcd', 'service/etcd',
    'poddisruptionbudget.policy/farm-apiserver', 'poddisruptionbudget.policy/etcd',
    'secret/farm-apiserver-tls', 'secret/etcd-server-tls', 'secret/etcd-peer-tls', 'secret/farm-apiserver-etcd-client',
    'apiservice.apiregistration.k8s.io/v1alpha.farm.example.com']) {
    assert.ok(lines.some((l) => l.startsWith(`${want} `)), `${want} missing from:\n${r.stdout}`);
  }
});

test('farm-apiserver: replicas, anti-affinity, PDB, rollout that keeps capacity, probes, etcd3 over TLS', () => {
  const dep = find(docs, 'Deployment', 'farm-apiserver');
  assert.equal(docs.filter((d) => d.kind === 'Deployment').length, 1, 'the HA Deployment replaces app.yaml\'s');
  assert.ok((dep.spec?.replicas ?? 0) >= 2, `replicas ${dep.spec?.replicas}`);
  assert.equal(dep.spec?.replicas, 2, 'default --replicas');
  assert.deepEqual(dep.spec?.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
  const labels = dep.spec?.template?.metadata.labels;
  const anti = podSpec(dep).affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  assert.ok(anti.some((t) => t.podAffinityTerm.topologyKey === 'kubernetes.io/hostname'
    && Object.entries(t.podAffinityTerm.labelSelector.matchLabels).every(([k, v]) => labels?.[k] === v)), JSON.stringify(anti));

  const pdb = find(docs, 'PodDisruptionBudget', 'farm-apiserver');
  assert.ok(pdb.spec?.minAvailable === 1 || pdb.spec?.maxUnavailable === 1, JSON.stringify(pdb.spec));
  assert.deepEqual((pdb.spec?.selector as { matchLabels: Record<string, string> }).matchLabels, { app: 'farm-apiserver' });

  const c = container(dep, 'farm-apiserver');
  assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
  assert.equal(c.livenessProbe?.httpGet?.path, '/livez');
  // A short etcd outage (≥ 60 s) must not get the pods restarted: /livez includes etcd.
  const live = c.livenessProbe!;
  assert.ok((live.periodSeconds ?? 10) * (live.failureThreshold ?? 3) >= 60, JSON.stringify(live));

  assert.equal(flag(c.args, '--storage-backend'), 'etcd3');
  const servers = flag(c.args, '--etcd-servers').split(',');
  assert.deepEqual(servers, [0, 1, 2].map((i) => `https://etcd-${i}.etcd.farm-system.svc:2379`));
  // The TLS files come from a Secret this render holds, with the keys the flags name.
  const mounts = c.volumeMounts ?? [];
  for (const f of ['--etcd-cafile', '--etcd-certfile', '--etcd-keyfile', '--tls-cert-file', '--tls-key-file']) {
    const path = flag(c.args, f);
    const mount = mounts.find((m) => path.startsWith(`${m.mountPath}/`));
    assert.ok(mount, `${f}=${path} is on no volume`);
    const secretName = podSpec(dep).volumes?.find((v) => v.name === mount.name)?.secret?.secretName;
    assert.ok(secretName, `${f}: volume ${mount.name} is no Secret`);
    const secret = find(docs, 'Secret', secretName);
    assert.ok(secret.data?.[path.slice(mount.mountPath.length + 1)], `${f}: Secret ${secretName} has no ${path}`);
  }
});

test('etcd: StatefulSet of 3 behind a headless Service, storage, TLS both ways, request size, no auto-compaction, PDB', () => {
  const sts = find(docs, 'StatefulSet', 'etcd');
  assert.equal(sts.spec?.replicas, 3);
  assert.equal(sts.spec?.podManagementPolicy, 'Parallel');
  const svc = find(docs, 'Service', sts.spec?.serviceName ?? '');
  assert.equal(svc.spec?.clusterIP, 'None');
  assert.equal(svc.spec?.publishNotReadyAddresses, true);
  const claims = sts.spec?.volumeClaimTemplates ?? [];
  assert.equal(claims.length, 1);
  const c = container(sts, 'etcd');
  assert.match(c.image, /^registry\.k8s\.io\/etcd:3\.5\.\d+-0$/);
  assert.ok(c.volumeMounts?.some((m) => m.name === claims[0]!.metadata.name && flag(c.args, '--data-dir').startsWith(`${m.mountPath}/`)), 'data dir on the claim');
  assert.ok(Number(flag(c.args, '--max-request-bytes')) >= 3.2 * 1024 * 1024);
  assert.equal(flag(c.args, '--max-request-bytes'), '8388608');
  assert.equal(flag(c.args, '--auto-compaction-retention'), '0');
  assert.equal(flag(c.args, '--client-cert-auth'), 'true');
  assert.equal(flag(c.args, '--peer-client-cert-auth'), 'true');
  for (const f of ['--listen-client-urls', '--advertise-client-urls', '--listen-peer-urls', '--initial-advertise-peer-urls']) assert.match(flag(c.args, f), /^https:\/\//, f);
  assert.equal(flag(c.args, '--initial-cluster'),
    [0, 1, 2].map((i) => `etcd-${i}=https://etcd-${i}.etcd.farm-system.svc:2380`).join(','));
  for (const f of ['--cert-file', '--key-file', '--trusted-ca-file', '--peer-cert-file', '--peer-key-file', '--peer-trusted-ca-file']) {
    const path = flag(c.args, f);
    const mount = c.volumeMounts?.find((m) => path.startsWith(`${m.mountPath}/`));
    const secretName = podSpec(sts).volumes?.find((v) => v.name === mount?.name)?.secret?.secretName;
    assert.ok(mount && secretName && find(docs, 'Secret', secretName).data?.[path.slice(mount.mountPath.length + 1)], `${f}=${path} not from a rendered Secret`);
  }
  const pdb = find(docs, 'PodDisruptionBudget', 'etcd');
  assert.equal(pdb.spec?.minAvailable, 2, 'quorum of 3');
});

// ---------- the rendered etcd, run for real on loopback ----------

interface Member { i: number; client: number; peer: number; metrics: number; proc?: ChildProcess; log: string }
const members: Member[] = [];
process.on('exit', () => { for (const m of members) m.proc?.kill('SIGKILL'); });

/** Writes each rendered Secret's keys to files (what the kubelet does for a secret volume). */
function secretDirs(): Map<string, string> {
  const dirs = new Map<string, string>();
  for (const s of docs.filter((d) => d.kind === 'Secret')) {
    const d = join(tmp, 'secrets', s.metadata.name);
    mkdirSync(d, { recursive: true });
    for (const [k, v] of Object.entries(s.data ?? {})) writeFileSync(join(d, k), Buffer.from(v, 'base64'), { mode: 0o600 });
    dirs.set(s.metadata.name, d);
  }
  return dirs;
}

/** A container's path under one of its mounts, as the file this test wrote for that volume. */
function hostPath(spec: PodSpec, c: Container, path: string, volumes: Map<string, string>): string {
  const m = c.volumeMounts?.find((x) => path === x.mountPath || path.startsWith(`${x.mountPath}/`));
  assert.ok(m, `${path} is on no volume`);
  const dir = volumes.get(m.name) ?? volumes.get(spec.volumes?.find((v) => v.name === m.name)?.secret?.secretName ?? '');
  assert.ok(dir, `no files for volume ${m.name}`);
  return dir + path.slice(m.mountPath.length);
}

/** The rendered etcd args for member i, with the cluster's names, ports and mounts mapped to this machine. */
function memberArgs(m: Member, secrets: Map<string, string>): string[] {
  const sts = find(docs, 'StatefulSet', 'etcd');
  const c = container(sts, 'etcd');
  const spec = podSpec(sts);
  const dataDir = join(tmp, `etcd-${m.i}`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const volumes = new Map([...secrets, [sts.spec?.volumeClaimTemplates?.[0]?.metadata.name ?? '', dataDir]]);
  const byHost = (name: string, port: string) => {
    const j = Number(/^etcd-(\d+)$/.exec(name)?.[1]);
    const other = members[j];
    assert.ok(other, `no member ${name}`);
    return port === '2380' ? other.peer : other.client;
  };
  const args = (c.args ?? []).map((a) => a
    // Kubernetes expands $(VAR) from the container's env; POD_NAME is the pod's name, etcd-<i>.
    .replaceAll('$(POD_NAME)', `etcd-${m.i}`)
    .replace(/https:\/\/(etcd-\d+)\.etcd\.farm-system\.svc:(2379|2380)/g, (_, name: string, port: string) => `https://127.0.0.1:${byHost(name, port)}`)
    .replace('https://0.0.0.0:2379', `https://127.0.0.1:${m.client}`)
    .replace('https://0.0.0.0:2380', `https://127.0.0.1:${m.peer}`)
    .replace('http://0.0.0.0:2381', `http://127.0.0.1:${m.metrics}`)
    .replace(/^(--[\w-]+(?:file|dir))=(\/.*)$/, (_, f: string, p: string) => `${f}=${hostPath(spec, c, p, volumes)}`));
  for (const a of args) assert.doesNotMatch(a, /farm-system\.svc|0\.0\.0\.0|=\/(etc|var)\//, `an argument left unmapped: ${a}`);
  assert.deepEqual(c.env?.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]), [['POD_NAME', 'metadata.name']]);
  return [...args, '--unsafe-no-fsync', '--log-level=warn'];
}

async function httpStatus(url: string): Promise<number | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return undefined;
  }
}

test('the rendered etcd runs: 3 members over peer TLS, probes answer, client cert required, 3 MiB objects fit', { timeout: 180_000 }, async () => {
  const bin = join(await ensureClusterBinaries(), 'etcd');
  const secrets = secretDirs();
  for (let i = 0; i < 3; i++) members.push({ i, client: await freePort(), peer: await freePort(), metrics: await freePort(), log: join(tmp, `etcd-${i}.log`) });
  for (const m of members) {
    const fd = openSync(m.log, 'a');
    m.proc = spawn(bin, memberArgs(m, secrets), { stdio: ['ignore', fd, fd] });
    closeSync(fd);
  }
  const logs = () => members.map((m) => `--- etcd-${m.i}:\n${readFileSync(m.log, 'utf8').slice(-2000)}`).join('\n');

  // The probes the StatefulSet names, on the metrics listener: ready once the members formed a quorum over peer TLS.
  const sts = find(docs, 'StatefulSet', 'etcd');
  const probes = container(sts, 'etcd');
  const deadline = Date.now() + 60_000;
  for (const m of members) {
    for (const p of [probes.startupProbe, probes.readinessProbe, probes.livenessProbe]) {
      assert.equal(p?.httpGet?.port, 'metrics');
      let status: number | undefined;
      while ((status = await httpStatus(`http://127.0.0.1:${m.metrics}${p.httpGet.path}`)) !== 200 && Date.now() < deadline) {
        assert.ok(m.proc?.exitCode === null, `etcd-${m.i} exited:\n${logs()}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(status, 200, `etcd-${m.i} ${p.httpGet.path}:\n${logs()}`);
    }
  }

  // farm-apiserver's view: its --etcd-servers and --etcd-* files, from its rendered Secret.
  const dep = find(docs, 'Deployment', 'farm-apiserver');
  const c = container(dep, 'farm-apiserver');
  const file = (f: string) => readFileSync(hostPath(podSpec(dep), c, flag(c.args, f), secrets));
  const hosts = flag(c.args, '--etcd-servers').split(',').map((u) => u.replace(/^https:\/\/etcd-(\d+)\.etcd\.farm-system\.svc:2379$/, (_, i: string) => `https://127.0.0.1:${members[Number(i)]!.client}`));
  assert.equal(hosts.length, 3);
  const rootCertificate = file('--etcd-cafile');
  const clients: EtcdClient[] = [];
  try {
    const withCert = connectEtcd({ hosts, credentials: { rootCertificate, certChain: file('--etcd-certfile'), privateKey: file('--etcd-keyfile') } });
    clients.push(withCert);
    const key = Buffer.from('/registry/ha-test/big');
    const value = Buffer.alloc(3 * 1024 * 1024 + 1024, 'x'); // over etcd's default 1.5 MiB request limit
    const put = await withCert.txn({ success: [{ request_put: { key, value } }] });
    assert.equal(put.succeeded, true);
    // Every member serves it (a quorum read from each), over the server certificate.
    for (const m of members) {
      const one = connectEtcd({ hosts: [`https://127.0.0.1:${m.client}`], credentials: { rootCertificate, certChain: file('--etcd-certfile'), privateKey: file('--etcd-keyfile') } });
      clients.push(one);
      const got = await one.range({ key });
      assert.equal(got.kvs.length, 1, `etcd-${m.i}`);
      assert.equal(got.kvs[0]!.value.length, value.length);
    }

    const noCert = connectEtcd({ hosts: [hosts[0]!], credentials: { rootCertificate } });
    clients.push(noCert);
    // Refused in the handshake (TLS alert 116), not for some other reason: the same dial with a certificate worked above.
    await assert.rejects(noCert.range({ key }), (e: Error) => { assert.match(e.message, /certificate required/); return true; });
  } finally {
    for (const cl of clients) cl.close();
  }

  // The server certificate is valid for the member's cluster name (what farm-apiserver dials in a pod).
  const authorized = await new Promise<boolean>((res, rej) => {
    const s = tlsConnect({
      host: '127.0.0.1', port: members[0]!.client, servername: 'etcd-0.etcd.farm-system.svc', ca: rootCertificate,
      cert: file('--etcd-certfile'), key: file('--etcd-keyfile'), ALPNProtocols: ['h2'],
    }, () => { res(s.authorized); s.end(); });
    s.setTimeout(5_000, () => { s.destroy(); rej(new Error('TLS handshake timed out')); });
    s.on('error', rej);
  });
  assert.equal(authorized, true);

  for (const m of members) m.proc?.kill('SIGTERM');
  await Promise.all(members.map((m) => new Promise<void>((r) => {
    if (m.proc?.exitCode !== null || m.proc.signalCode !== null) return r();
    const t = setTimeout(() => { m.proc?.kill('SIGKILL'); }, 5_000);
    m.proc.once('exit', () => { clearTimeout(t); r(); });
  })));
});
