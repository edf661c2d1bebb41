// The Helm chart (charts/farm-apiserver) with a real helm (scripts/helm-bin.sh builds it from Go modules)
// against a real kube-apiserver 1.33: `helm lint` (and --strict) is clean; the render agrees with
// `npm run -s manifests` (app.yaml, and app-ha.yaml's farm-apiserver for the HA values); every rendered
// document passes `kubectl apply --dry-run=server`, cert-manager's and prometheus-operator's kinds
// against their real CRDs (from their Go modules); and `helm install` + `helm upgrade` into the control
// plane register an APIService that becomes Available once our server runs with the chart's certificate
// and as the chart's ServiceAccount. No kubelet runs here, so the Deployment's pod never starts: the
// server runs as a local process, with the args of the Deployment the chart installed, behind the
// chart's Service switched to `externalServer` (an ExternalName the aggregator dials).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { startControlPlane, freePort, type ControlPlane } from '../cluster/controlPlane.js';
import { kubectl } from '../helpers/kubectl.js';
import { renderManifests, haTopology } from '../../scripts/manifests.js';
import { ensureDevCerts } from '../../src/certs/devCerts.js';
import { ensureEtcdCerts } from '../../src/certs/etcdCerts.js';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/farm-apiserver');
const HA_VALUES = join(CHART, 'ci/ha-values.yaml');
const RELEASE = 'farm-apiserver';
const NS = 'farm-system';
const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-helm-'));
const home = join(tmp, 'home');
mkdirSync(home);

// The real CRDs of the optional kinds the chart renders, from the projects' Go modules (the module proxy).
const UPSTREAM_CRDS = [
  { module: 'github.com/cert-manager/cert-manager', version: 'v1.21.2', files: ['deploy/crds/cert-manager.io_issuers.yaml', 'deploy/crds/cert-manager.io_certificates.yaml'] },
  { module: 'github.com/prometheus-operator/prometheus-operator', version: 'v0.85.0', files: ['example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml'] },
];

// ---------- the rendered documents, typed as far as these checks read them ----------

interface Container {
  name: string; image: string; args?: string[];
  ports?: unknown; readinessProbe?: unknown; livenessProbe?: unknown; startupProbe?: unknown; resources?: unknown; securityContext?: unknown;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
interface PodSpec {
  serviceAccountName?: string; securityContext?: unknown; containers: Container[];
  volumes?: Array<{ name: string; secret?: { secretName: string } }>;
  affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: Array<{ weight: number; podAffinityTerm: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } } }> } };
}
interface Doc {
  apiVersion: string; kind: string; type?: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  rules?: unknown[]; roleRef?: unknown; subjects?: unknown[];
  spec?: {
    replicas?: number; strategy?: unknown; maxUnavailable?: number | string;
    selector?: Record<string, unknown>;
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    type?: string; externalName?: string; ports?: Array<{ name: string; port: number; targetPort?: string | number }>;
    group?: string; version?: string; service?: { namespace: string; name: string; port: number }; caBundle?: string;
    secretName?: string; dnsNames?: string[]; isCA?: boolean; issuerRef?: { name: string; kind?: string; group?: string };
    ca?: { secretName: string }; selfSigned?: Record<string, never>;
    endpoints?: Array<{ port: string; scheme: string; path: string; bearerTokenFile?: string; tlsConfig?: { ca?: { secret?: { name: string; key: string } }; serverName?: string } }>;
  };
}

function parseDocs(yaml: string): Doc[] {
  const parsed = parseAllDocuments(yaml);
  assert.deepEqual(parsed.flatMap((d) => d.errors), []);
  return parsed.map((d) => d.toJSON() as Doc | null).filter((d): d is Doc => d !== null);
}

const id = (d: Doc) => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;

function find(docs: Doc[], kind: string, name: string): Doc {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(d, `no ${kind} ${name} in: ${docs.map(id).join(', ')}`);
  return d;
}

const podSpec = (d: Doc): PodSpec => { assert.ok(d.spec?.template, `${id(d)} has no pod template`); return d.spec.template.spec; };
const container = (d: Doc): Container => { const c = podSpec(d).containers[0]; assert.ok(c, `${id(d)} has no container`); return c; };

// ---------- processes ----------

interface Run { code: number | null; stdout: string; stderr: string }

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const limit = opts.timeoutMs ?? 120_000;
    const timer = setTimeout(() => { child.kill('SIGKILL'); rej(new Error(`${cmd} ${args.join(' ')}: no exit in ${limit} ms\n${stderr}`)); }, limit);
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('error', (e) => { clearTimeout(timer); rej(e); });
    child.on('close', (code) => { clearTimeout(timer); res({ code, stdout, stderr }); });
  });
}

let helmBin = '';
// helm's own dirs (cache, config, data) in this run's tmp: nothing of the user's is read or written.
const helmEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home,
  HELM_CACHE_HOME: join(home, 'helm-cache'), HELM_CONFIG_HOME: join(home, 'helm-config'), HELM_DATA_HOME: join(home, 'helm-data'),
};
const helm = (args: string[]) => run(helmBin, args, { env: helmEnv });

async function mustHelm(args: string[]): Promise<string> {
  const r = await helm(args);
  assert.equal(r.code, 0, `helm ${args.join(' ')}:\n${r.stderr}`);
  return r.stdout;
}

const template = async (...extra: string[]) => parseDocs(await mustHelm(['template', RELEASE, CHART, '--namespace', NS, ...extra]));

const admin = (args: string[], input?: string, timeoutMs = 60_000) => kubectl(args, { kubeconfig: cp.adminKubeconfig, home, input, timeoutMs });

async function mustKubectl(args: string[], input?: string): Promise<string> {
  const r = await admin(args, input);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}:\n${r.stderr}`);
  return r.stdout;
}

/** `go mod download` of a module at a version (cached in GOMODCACHE); the directory of its files. */
async function moduleDir(module: string, version: string): Promise<string> {
  const r = await run('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: tmp, env: { ...process.env, GOTOOLCHAIN: 'local' }, timeoutMs: 300_000 });
  assert.equal(r.code, 0, `go mod download ${module}@${version}:\n${r.stdout}${r.stderr}`);
  const dir = (JSON.parse(r.stdout) as { Dir?: string }).Dir;
  assert.ok(dir, r.stdout);
  return dir;
}

let cp: ControlPlane;
const certDir = join(tmp, 'manifest-certs');

before(async () => {
  const started = Date.now();
  const bin = await run('bash', [join(ROOT, 'scripts/helm-bin.sh')], { timeoutMs: 40 * 60_000 });
  assert.equal(bin.code, 0, `scripts/helm-bin.sh failed:\n${bin.stderr}`);
  helmBin = bin.stdout.trim().split('\n').pop() ?? '';
  console.log(`[helm] ${helmBin} (${Math.round((Date.now() - started) / 1000)} s)`);
  const v = await mustHelm(['version', '--short']);
  assert.match(v, /^v4\.\d+\.\d+/);
  await ensureDevCerts(certDir);
  cp = await startControlPlane({ dir: join(tmp, 'cluster'), log: (l) => console.log(`[cp] ${l}`) });
}, { timeout: 60 * 60_000 }); // cold builds of helm and the control plane take a while

let farm: ChildProcess | undefined;
after(async () => {
  if (farm && farm.exitCode === null && farm.signalCode === null) {
    const f = farm;
    const exited = new Promise((r) => f.once('exit', r));
    f.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 8000))]);
    if (f.exitCode === null && f.signalCode === null) f.kill('SIGKILL');
  }
  await cp?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[helm] kept ${tmp}`);
});

// ---------- lint and render ----------

test('helm lint is clean, also with --strict, for the default values and the HA values', async () => {
  for (const values of [[], ['--values', HA_VALUES]]) {
    for (const strict of [[], ['--strict']]) {
      const r = await helm(['lint', CHART, ...strict, ...values]);
      const what = `helm lint ${[...strict, ...values].join(' ')}`;
      assert.equal(r.code, 0, `${what}:\n${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/, what);
      assert.doesNotMatch(r.stdout + r.stderr, /\[(WARNING|ERROR)\]/, `${what}:\n${r.stdout}`);
    }
  }
  // --strict does fail on a problem: an unknown storage backend breaks the values schema.
  const bad = await helm(['lint', CHART, '--strict', '--set', 'storage.backend=sqlite']);
  assert.notEqual(bad.code, 0, bad.stdout);
  assert.match(bad.stdout + bad.stderr, /storage\/backend|storage\.backend/);
});

test('values that cannot work stop the render with one line saying why', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['--set', 'replicas=2'], /replicas above 1 need storage\.backend=etcd3/],
    [['--set', 'storage.backend=etcd3'], /storage\.backend=etcd3 needs storage\.etcd\.servers/],
    [['--set', 'externalServer.enabled=true'], /externalServer\.enabled needs externalServer\.host/],
    [['--set', 'certificates.mode=vault'], /certificates\/mode|certificates\.mode/],
  ];
  for (const [args, message] of cases) {
    const r = await helm(['template', RELEASE, CHART, '--namespace', NS, ...args]);
    assert.notEqual(r.code, 0, `${args.join(' ')} rendered:\n${r.stdout}`);
    assert.match(r.stderr, message, args.join(' '));
  }
});

/** The RBAC documents' rules, roleRefs and subjects, keyed by kind/namespace/name. */
const rbacOf = (docs: Doc[]) => new Map(docs.filter((d) => d.apiVersion.startsWith('rbac.')).map((d) => [id(d), { rules: d.rules, roleRef: d.roleRef, subjects: d.subjects }]));

test('the default render is app.yaml (npm run -s manifests): the same objects, RBAC, pod, probes, Service and APIService', async () => {
  const chart = await template();
  const app = parseDocs(renderManifests({ certDir }));
  // Helm charts do not create their namespace (helm install --create-namespace does); everything else is there.
  assert.deepEqual(chart.map(id).sort(), app.filter((d) => d.kind !== 'Namespace').map(id).sort());
  assert.deepEqual(rbacOf(chart), rbacOf(app));
  for (const role of ['farm-apiserver:view', 'farm-apiserver:edit']) {
    const want = Object.entries(find(app, 'ClusterRole', role).metadata.labels ?? {});
    assert.ok(want.length >= 2, role);
    for (const [k, v] of want) assert.equal(find(chart, 'ClusterRole', role).metadata.labels?.[k], v, `${role} ${k}`);
  }

  const [cd, ad] = [find(chart, 'Deployment', RELEASE), find(app, 'Deployment', RELEASE)];
  assert.equal(cd.spec?.replicas, ad.spec?.replicas);
  assert.equal(cd.spec?.strategy, undefined);
  const { image: chartImage, ...chartContainer } = container(cd);
  const { image: appImage, ...appContainer } = container(ad);
  assert.deepEqual(chartContainer, appContainer);
  // The image: the chart's appVersion by default (Helm's convention) where app.yaml says latest.
  assert.equal(chartImage, 'farm-apiserver:0.1.0');
  assert.equal(appImage, 'farm-apiserver:latest');
  const { containers: _c1, ...chartPod } = podSpec(cd);
  const { containers: _c2, ...appPod } = podSpec(ad);
  assert.deepEqual(chartPod, appPod);
  // Each Service selects its own Deployment's pods (the chart labels them the Helm way, app.yaml with app=).
  for (const docs of [chart, app]) {
    assert.deepEqual(find(docs, 'Service', RELEASE).spec?.selector, find(docs, 'Deployment', RELEASE).spec?.template?.metadata.labels);
    assert.deepEqual(find(docs, 'Deployment', RELEASE).spec?.selector, { matchLabels: find(docs, 'Deployment', RELEASE).spec?.template?.metadata.labels });
  }
  assert.deepEqual(find(chart, 'Service', RELEASE).spec?.ports, find(app, 'Service', RELEASE).spec?.ports);

  const [ca, aa] = [find(chart, 'APIService', 'v1alpha.farm.example.com'), find(app, 'APIService', 'v1alpha.farm.example.com')];
  const { caBundle, ...chartSpec } = ca.spec ?? {};
  const { caBundle: _b, ...appSpec } = aa.spec ?? {};
  assert.deepEqual(chartSpec, appSpec);
  assert.equal(ca.metadata.annotations, undefined);

  // The generated certificate: the Secret the pod mounts, signed by the CA in the caBundle, for the name
  // the aggregator verifies (<service>.<namespace>.svc).
  const secret = find(chart, 'Secret', `${RELEASE}-tls`);
  assert.equal(secret.type, 'kubernetes.io/tls');
  assert.equal(podSpec(cd).volumes?.find((v) => v.name === 'tls')?.secret?.secretName, secret.metadata.name);
  assert.equal(caBundle, secret.data?.['ca.crt']);
  const caCert = new X509Certificate(Buffer.from(caBundle ?? '', 'base64'));
  const serving = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
  assert.equal(caCert.ca, true);
  assert.ok(serving.checkIssued(caCert) && serving.verify(caCert.publicKey), 'serving certificate not signed by the caBundle');
  assert.equal(serving.checkHost(`${RELEASE}.${NS}.svc`), `${RELEASE}.${NS}.svc`);
  assert.ok(serving.checkPrivateKey(createPrivateKey(Buffer.from(secret.data?.['tls.key'] ?? '', 'base64'))), 'tls.key is not the serving certificate\'s key');
});

test('the HA values render app-ha.yaml\'s farm-apiserver: replicas, rollout, anti-affinity, PDB, etcd3 flags and Secret, probes', async () => {
  // The HA values with Helm's certificates and no ServiceMonitor, to compare with the HA manifests (3 replicas, 3 etcd members).
  const chart = await template('--values', HA_VALUES, '--set', 'certificates.mode=helm', '--set', 'serviceMonitor.enabled=false');
  const ha = { replicas: 3, etcdMembers: 3 };
  await ensureEtcdCerts(certDir, haTopology(ha));
  const app = parseDocs(renderManifests({ certDir, ha }));
  const farmOnly = (d: Doc) => d.kind !== 'Namespace' && !/^etcd/.test(d.metadata.name) && d.metadata.name !== 'farm-apiserver-etcd-client';
  // The etcd cluster itself (StatefulSet, Services, its PDB and Secrets) is not the chart's: it points at one.
  assert.deepEqual(chart.map(id).sort(), app.filter(farmOnly).map(id).sort());

  const [cd, ad] = [find(chart, 'Deployment', RELEASE), find(app, 'Deployment', RELEASE)];
  assert.equal(cd.spec?.replicas, 3);
  assert.equal(cd.spec?.replicas, ad.spec?.replicas);
  assert.deepEqual(cd.spec?.strategy, ad.spec?.strategy);
  const { image: _i1, ...chartContainer } = container(cd);
  const { image: _i2, ...appContainer } = container(ad);
  assert.deepEqual(chartContainer, appContainer);
  const { containers: _c1, affinity: chartAffinity, ...chartPod } = podSpec(cd);
  const { containers: _c2, affinity: appAffinity, ...appPod } = podSpec(ad);
  assert.deepEqual(chartPod, appPod);
  // The same anti-affinity, each over its own pod labels.
  const spread = (d: Doc, a: PodSpec['affinity']) => JSON.stringify(a).replace(JSON.stringify(d.spec?.template?.metadata.labels), '<pod labels>');
  assert.equal(spread(cd, chartAffinity), spread(ad, appAffinity));
  assert.match(spread(cd, chartAffinity), /<pod labels>/);

  const [cp1, ap1] = [find(chart, 'PodDisruptionBudget', RELEASE), find(app, 'PodDisruptionBudget', RELEASE)];
  assert.equal(cp1.spec?.maxUnavailable, ap1.spec?.maxUnavailable);
  assert.deepEqual(cp1.spec?.selector, { matchLabels: cd.spec?.template?.metadata.labels });
  // No PDB for one replica; none for an external server either.
  assert.ok(!(await template('--set', 'storage.backend=etcd3', '--set', 'storage.etcd.servers={http://etcd:2379}')).some((d) => d.kind === 'PodDisruptionBudget'));
});

test('cert-manager and ServiceMonitor: the Certificate chain, caBundle injection, an HTTPS scrape of /metrics verified by the serving CA', async () => {
  const docs = await template('--values', HA_VALUES);
  assert.ok(!docs.some((d) => d.kind === 'Secret'), 'cert-manager writes the TLS Secret, not Helm');
  const api = find(docs, 'APIService', 'v1alpha.farm.example.com');
  assert.equal(api.spec?.caBundle, undefined);
  const inject = api.metadata.annotations?.['cert-manager.io/inject-ca-from'] ?? '';
  const [ns, certName] = inject.split('/');
  assert.equal(ns, NS);
  const serving = find(docs, 'Certificate', certName ?? '');
  const dep = find(docs, 'Deployment', RELEASE);
  assert.equal(serving.spec?.secretName, podSpec(dep).volumes?.find((v) => v.name === 'tls')?.secret?.secretName);
  assert.ok(serving.spec?.dnsNames?.includes(`${RELEASE}.${NS}.svc`), JSON.stringify(serving.spec?.dnsNames));
  // serving <- CA Issuer (the CA Certificate's Secret) <- CA Certificate <- self-signed Issuer
  const caIssuer = find(docs, 'Issuer', serving.spec?.issuerRef?.name ?? '');
  const caCert = docs.find((d) => d.kind === 'Certificate' && d.spec?.secretName === caIssuer.spec?.ca?.secretName);
  assert.ok(caCert?.spec?.isCA, 'the CA Issuer signs with a CA Certificate of the chart');
  assert.deepEqual(find(docs, 'Issuer', caCert.spec.issuerRef?.name ?? '').spec, { selfSigned: {} });

  const sm = find(docs, 'ServiceMonitor', RELEASE);
  const svc = find(docs, 'Service', RELEASE);
  const matchLabels = (sm.spec?.selector as { matchLabels: Record<string, string> }).matchLabels;
  for (const [k, v] of Object.entries(matchLabels)) assert.equal(svc.metadata.labels?.[k], v, `Service lacks the ServiceMonitor's label ${k}`);
  assert.equal(sm.metadata.labels?.release, 'prometheus');
  const ep = sm.spec?.endpoints?.[0];
  assert.ok(ep);
  assert.ok(svc.spec?.ports?.some((p) => p.name === ep.port));
  assert.deepEqual([ep.scheme, ep.path, ep.bearerTokenFile], ['https', '/metrics', '/var/run/secrets/kubernetes.io/serviceaccount/token']);
  assert.deepEqual(ep.tlsConfig?.ca?.secret, { name: serving.spec?.secretName, key: 'ca.crt' });
  assert.ok(serving.spec?.dnsNames?.includes(ep.tlsConfig?.serverName ?? ''), ep.tlsConfig?.serverName);
  const reader = find(docs, 'ClusterRole', `${RELEASE}:metrics-reader`);
  assert.deepEqual(reader.rules, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
  assert.deepEqual(find(docs, 'ClusterRoleBinding', `${RELEASE}:metrics-reader`).subjects, [{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' }]);
  // Off by default.
  assert.ok(!(await template()).some((d) => d.kind === 'ServiceMonitor' || d.metadata.name.endsWith(':metrics-reader')));
});

// ---------- against the real kube-apiserver ----------

test('every rendered document passes kubectl apply --dry-run=server (cert-manager and ServiceMonitor kinds against their real CRDs)', { timeout: 10 * 60_000 }, async () => {
  for (const { module, version, files } of UPSTREAM_CRDS) {
    const dir = await moduleDir(module, version);
    for (const f of files) {
      const crd = parseDocs(readFileSync(join(dir, f), 'utf8'));
      assert.equal(crd.length, 1);
      await mustKubectl(['apply', '--server-side', '-f', join(dir, f)]);
      await mustKubectl(['wait', '--for=condition=Established', `crd/${crd[0]!.metadata.name}`, '--timeout=60s']);
    }
  }
  // A dry run creates nothing, so the namespaced objects need the namespace to exist already (NamespaceLifecycle).
  await mustKubectl(['create', 'namespace', NS]);
  for (const values of [[], ['--values', HA_VALUES]]) {
    const docs = await template(...values);
    const r = await admin(['apply', '--dry-run=server', '-f', '-'], docs.map((d) => stringify(d)).join('---\n'));
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, docs.length, r.stdout);
    for (const l of lines) assert.match(l, /\(server dry run\)$/);
    const kinds = new Set(docs.map((d) => d.kind));
    if (values.length) for (const k of ['Certificate', 'Issuer', 'ServiceMonitor', 'PodDisruptionBudget']) assert.ok(kinds.has(k), k);
  }
  // The CRDs' schemas are applied, not only their kinds: a misspelt field is refused.
  const docs = await template('--values', HA_VALUES);
  const broken = docs.map((d) => stringify(d)).join('---\n').replace('dnsNames:', 'dnsName:');
  const r = await admin(['apply', '--dry-run=server', '-f', '-'], broken);
  assert.notEqual(r.code, 0, r.stdout);
  assert.match(r.stderr, /unknown field "spec\.dnsName"/);
});

/** A Secret's keys written to files, as the kubelet does for a secret volume. */
async function secretFiles(name: string): Promise<{ dir: string; data: Record<string, string> }> {
  const s = JSON.parse(await mustKubectl(['-n', NS, 'get', 'secret', name, '-o', 'json'])) as Doc;
  const dir = join(tmp, 'volumes', name);
  mkdirSync(dir, { recursive: true });
  for (const [k, v] of Object.entries(s.data ?? {})) writeFileSync(join(dir, k), Buffer.from(v, 'base64'), { mode: 0o600 });
  return { dir, data: s.data ?? {} };
}

interface Condition { type: string; status: string; reason?: string; message?: string }
async function availability(): Promise<Condition | undefined> {
  const a = JSON.parse(await mustKubectl(['get', 'apiservice', 'v1alpha.farm.example.com', '-o', 'json'])) as { status?: { conditions?: Condition[] } };
  return a.status?.conditions?.find((c) => c.type === 'Available');
}

function readyz(port: number, ca: string, servername: string): Promise<number> {
  return new Promise((res) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', ca, servername, timeout: 2000 }, (r) => { r.resume(); res(r.statusCode ?? 0); });
    req.on('error', () => res(0));
    req.on('timeout', () => { req.destroy(); res(0); });
    req.end();
  });
}

test('helm install, then upgrade to an external server: the APIService becomes Available with our server behind it', { timeout: 10 * 60_000 }, async () => {
  await mustHelm(['install', RELEASE, CHART, '--namespace', NS, '--create-namespace', '--kubeconfig', cp.adminKubeconfig]);
  const dep = JSON.parse(await mustKubectl(['-n', NS, 'get', 'deployment', RELEASE, '-o', 'json'])) as Doc;
  const tls = await secretFiles(`${RELEASE}-tls`);
  const api = JSON.parse(await mustKubectl(['get', 'apiservice', 'v1alpha.farm.example.com', '-o', 'json'])) as Doc;
  assert.equal(api.spec?.caBundle, tls.data['ca.crt'], 'the installed caBundle is the installed Secret\'s CA');

  // No pod can run here (no kubelet, no endpoints controller), so the Service has no Endpoints and the aggregator says so.
  let cond: Condition | undefined;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
    cond = await availability();
    if (cond?.status === 'False' && cond.reason === 'EndpointsNotFound') break;
  }
  assert.deepEqual([cond?.status, cond?.reason], ['False', 'EndpointsNotFound'], JSON.stringify(cond));

  // Our server, as the pod would run it: the installed Deployment's args, its files from the chart's Secret,
  // the chart's ServiceAccount (a token in a kubeconfig stands in for the in-cluster config), on loopback.
  const port = await freePort();
  const c = container(dep);
  const tlsMount = c.volumeMounts?.find((m) => m.name === 'tls');
  assert.ok(tlsMount);
  assert.equal(podSpec(dep).volumes?.find((v) => v.name === 'tls')?.secret?.secretName, `${RELEASE}-tls`);
  const args = (c.args ?? []).map((a) => a
    .replace(/^--port=8443$/, `--port=${port}`)
    .replace(/^--bind-address=0\.0\.0\.0$/, '--bind-address=127.0.0.1')
    .replace(`=${tlsMount.mountPath}/`, `=${tls.dir}/`));
  assert.deepEqual(args.filter((a) => /0\.0\.0\.0|=\/var\/run|8443/.test(a)), [], 'an argument left unmapped');
  assert.equal(args.filter((a) => a.startsWith('--tls-')).length, 2, JSON.stringify(args));
  const sa = podSpec(dep).serviceAccountName ?? '';
  assert.equal(sa, RELEASE);
  const token = (await mustKubectl(['-n', NS, 'create', 'token', sa, '--duration=1h'])).trim();
  const saKubeconfig = join(tmp, 'sa.kubeconfig');
  await writeKubeconfig(saKubeconfig, { server: cp.apiserverUrl, caPem: readFileSync(cp.clusterCa, 'utf8'), token });
  const log = join(tmp, 'farm-apiserver.log');
  const out = openSync(log, 'a');
  farm = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/main.ts'), ...args, '--kubeconfig', saKubeconfig, '--cert-dir', join(tmp, 'farm-certs')],
    { cwd: ROOT, stdio: ['ignore', out, out], env: { ...process.env, KUBERNETES_SERVICE_HOST: '' } });
  closeSync(out);
  const tail = () => readFileSync(log, 'utf8').split('\n').slice(-30).join('\n');
  const ca = readFileSync(join(tls.dir, 'ca.crt'), 'utf8');
  let status = 0;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline && status !== 200; await new Promise((r) => setTimeout(r, 250))) {
    assert.ok(farm.exitCode === null, `farm-apiserver exited:\n${tail()}`);
    // Verified as the aggregator verifies it: the chart's CA, the name <service>.<namespace>.svc.
    status = await readyz(port, ca, `${RELEASE}.${NS}.svc`);
  }
  assert.equal(status, 200, tail());

  // Point the chart's Service at it: the values switch for a server outside the cluster.
  await mustHelm(['upgrade', RELEASE, CHART, '--namespace', NS, '--kubeconfig', cp.adminKubeconfig,
    '--set', 'externalServer.enabled=true', '--set', 'externalServer.host=localhost', '--set', `externalServer.port=${port}`]);
  const svc = JSON.parse(await mustKubectl(['-n', NS, 'get', 'service', RELEASE, '-o', 'json'])) as Doc;
  assert.deepEqual([svc.spec?.type, svc.spec?.externalName], ['ExternalName', 'localhost']);
  const gone = await admin(['-n', NS, 'get', 'deployment', RELEASE]);
  assert.match(gone.stderr, /NotFound/, 'the upgrade removed the Deployment');
  // The certificate survived the upgrade (lookup), so the running server and the caBundle still match.
  const fingerprints = (data: Record<string, string>) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, createHash('sha256').update(v).digest('hex')]));
  assert.deepEqual(fingerprints((await secretFiles(`${RELEASE}-tls`)).data), fingerprints(tls.data));

  const wait = await admin(['wait', '--for=condition=Available', 'apiservice/v1alpha.farm.example.com', '--timeout=120s'], undefined, 130_000);
  assert.equal(wait.code, 0, `${wait.stderr}\n${JSON.stringify(await availability())}\n${tail()}`);
  assert.equal((await availability())?.status, 'True');

  // Through the aggregator, as admin: list, create, read back; FarmPods (the chart's Pod RBAC) answer too.
  assert.match((await admin(['get', 'llamas', '-A'])).stderr, /No resources found/);
  const llama = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'dolly', namespace: 'default' }, spec: { weight: 120, height: 1.7 } };
  await mustKubectl(['create', '-f', '-'], JSON.stringify(llama));
  const got = JSON.parse(await mustKubectl(['-n', 'default', 'get', 'llama', 'dolly', '-o', 'json'])) as { spec: Record<string, unknown> };
  assert.deepEqual(got.spec, { weight: 120, height: 1.7, color: 'white', shorn: false });
  await mustKubectl(['get', 'farmpods', '-A']);

  // The chart's user roles: alice, bound to farm-apiserver:edit and :view in default only, may write llamas there, nowhere else.
  for (const role of ['edit', 'view']) await mustKubectl(['-n', 'default', 'create', 'rolebinding', `alice-farm-${role}`, `--clusterrole=${RELEASE}:${role}`, '--user=alice']);
  const alice = (args: string[], input?: string) => kubectl(args, { kubeconfig: cp.kubeconfigFor('alice'), home, input });
  const created = await alice(['create', '-f', '-'], JSON.stringify({ ...llama, metadata: { name: 'alpaca', namespace: 'default' } }));
  assert.equal(created.code, 0, created.stderr);
  assert.equal((await alice(['-n', 'default', 'get', 'llamas', '-o', 'name'])).stdout.trim().split('\n').sort().join(' '), 'llama.farm.example.com/alpaca llama.farm.example.com/dolly');
  const elsewhere = await alice(['-n', NS, 'get', 'llamas']);
  assert.notEqual(elsewhere.code, 0);
  assert.match(elsewhere.stderr, /forbidden/i);

  // helm uninstall takes everything away, the kube-system RoleBinding and cluster-scoped objects included.
  await mustHelm(['uninstall', RELEASE, '--namespace', NS, '--kubeconfig', cp.adminKubeconfig]);
  for (const what of [['apiservice', 'v1alpha.farm.example.com'], ['clusterrole', `${RELEASE}:view`], ['clusterrolebinding', `${RELEASE}:system:auth-delegator`],
    ['-n', 'kube-system', 'rolebinding', `${RELEASE}:extension-apiserver-authentication-reader`], ['-n', NS, 'secret', `${RELEASE}-tls`]]) {
    const r = await admin(['get', ...what]);
    assert.match(r.stderr, /NotFound/, what.join(' '));
  }
});
