// The manifests command's HA option and the etcd PKI behind it, without a cluster: the default render is
// byte for byte what HEAD's script renders, the sizes reach every place that depends on them, bad command
// lines are one line (exit 2), and the etcd certificates carry what etcd and its clients check.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { ensureDevCerts } from '../../src/certs/devCerts.js';
import { ETCD_CLIENT_COMMON_NAME, ETCD_LEAVES, ensureEtcdCerts, etcdMemberHosts } from '../../src/certs/etcdCerts.js';
import { HA_DEFAULTS, HA_ETCD, haTopology, renderManifests } from '../../scripts/manifests.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = mkdtempSync(join(tmpdir(), 'farm-manifests-ha-'));
const certDir = join(tmp, 'certs');
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

interface Container { name: string; args?: string[]; ports?: Array<{ name: string; containerPort: number }>; volumeMounts?: Array<{ name: string; mountPath: string }> }
interface Doc {
  kind: string; metadata: { name: string; namespace?: string };
  spec?: { replicas?: number; minAvailable?: number; template?: { spec: { containers: Container[]; volumes?: Array<{ name: string }> } } };
}
const parse = (yaml: string): Doc[] => parseAllDocuments(yaml).map((d) => d.toJSON() as Doc);
const find = (docs: Doc[], kind: string, name: string): Doc => {
  const d = docs.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(d, `no ${kind}/${name}`);
  return d;
};
const firstContainer = (d: Doc): Container => d.spec!.template!.spec.containers[0]!;
const flag = (c: Container, name: string): string | undefined => c.args?.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);

function run(script: string, args: string[], cwd = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); rej(new Error(`${script} ${args.join(' ')} did not finish in 60 s`)); }, 60_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('exit', (code) => { clearTimeout(timer); res({ code, stdout, stderr }); });
  });
}

before(async () => {
  await ensureDevCerts(certDir);
  await ensureEtcdCerts(certDir, haTopology(HA_DEFAULTS));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('the default render (no --ha)', () => {
  it('is byte for byte what HEAD\'s scripts/manifests.ts renders from the same app.yaml and certs', async () => {
    // HEAD's script next to this tree's app.yaml, src and node_modules: only the script differs.
    const head = join(tmp, 'head');
    mkdirSync(join(head, 'scripts'), { recursive: true });
    writeFileSync(join(head, 'scripts', 'manifests.ts'), execFileSync('git', ['show', 'HEAD:scripts/manifests.ts'], { cwd: ROOT }));
    copyFileSync(join(ROOT, 'app.yaml'), join(head, 'app.yaml'));
    for (const p of ['src', 'node_modules', 'package.json', 'tsconfig.json']) symlinkSync(join(ROOT, p), join(head, p));
    for (const extra of [[], ['--local-port', '8443']]) {
      const [was, now] = await Promise.all([run('scripts/manifests.ts', ['--cert-dir', certDir, ...extra], head), run('scripts/manifests.ts', ['--cert-dir', certDir, ...extra])]);
      assert.equal(was.code, 0, was.stderr);
      assert.equal(now.code, 0, now.stderr);
      assert.equal(now.stdout, was.stdout, `render with ${extra.join(' ') || 'no options'} changed`);
    }
    assert.equal(renderManifests({ certDir }), (await run('scripts/manifests.ts', ['--cert-dir', certDir])).stdout);
  });

  it('--ha=false is the default render', async () => {
    const [plain, off] = await Promise.all([run('scripts/manifests.ts', ['--cert-dir', certDir]), run('scripts/manifests.ts', ['--cert-dir', certDir, '--ha=false'])]);
    assert.equal(off.code, 0, off.stderr);
    assert.equal(off.stdout, plain.stdout);
  });
});

describe('the HA render', () => {
  it('keeps every argument, port and mount of app.yaml\'s Deployment (only adds to it)', () => {
    const app = firstContainer(find(parse(renderManifests({ certDir })), 'Deployment', 'farm-apiserver'));
    const ha = firstContainer(find(parse(renderManifests({ certDir, ha: HA_DEFAULTS })), 'Deployment', 'farm-apiserver'));
    for (const a of app.args ?? []) assert.ok(ha.args?.includes(a), `HA Deployment lost ${a}`);
    assert.deepEqual(ha.ports, app.ports);
    for (const m of app.volumeMounts ?? []) assert.ok(ha.volumeMounts?.some((x) => x.name === m.name && x.mountPath === m.mountPath), `HA Deployment lost mount ${m.mountPath}`);
  });

  it('sizes: --replicas and --etcd-members reach the replicas, the member lists and the etcd quorum', async () => {
    const dir = join(tmp, 'sized');
    const r = await run('scripts/manifests.ts', ['--cert-dir', dir, '--ha', '--replicas=3', '--etcd-members', '5']);
    assert.equal(r.code, 0, r.stderr);
    const docs = parse(r.stdout);
    assert.equal(find(docs, 'Deployment', 'farm-apiserver').spec?.replicas, 3);
    const sts = find(docs, 'StatefulSet', HA_ETCD.name);
    assert.equal(sts.spec?.replicas, 5);
    assert.equal(find(docs, 'PodDisruptionBudget', HA_ETCD.name).spec?.minAvailable, 3);
    const hosts = etcdMemberHosts({ ...HA_ETCD, members: 5 });
    assert.equal(flag(firstContainer(sts), '--initial-cluster'), hosts.map((h, i) => `etcd-${i}=https://${h}:2380`).join(','));
    assert.equal(flag(firstContainer(find(docs, 'Deployment', 'farm-apiserver')), '--etcd-servers'), hosts.map((h) => `https://${h}:2379`).join(','));
    // The certificates were made for these 5 members.
    const server = new X509Certificate(readFileSync(join(dir, 'etcd', 'server.crt')));
    for (const h of hosts) assert.equal(server.checkHost(h), h);
  });

  it('app-ha.yaml\'s etcd is where the certificates and member names say it is', () => {
    const docs = parse(renderManifests({ certDir, ha: HA_DEFAULTS }));
    const sts = find(docs, 'StatefulSet', HA_ETCD.name);
    assert.equal(sts.metadata.namespace, HA_ETCD.namespace);
    assert.equal((sts.spec as { serviceName?: string }).serviceName, HA_ETCD.name);
    assert.equal(find(docs, 'Service', HA_ETCD.name).metadata.namespace, HA_ETCD.namespace);
    assert.equal(flag(firstContainer(sts), '--advertise-client-urls'), `https://$(POD_NAME).${HA_ETCD.name}.${HA_ETCD.namespace}.svc:2379`);
    assert.doesNotMatch(renderManifests({ certDir, ha: HA_DEFAULTS }), /\{\{|\}\}/);
  });

  it('a bad command line is one line on stderr, exit 2, and renders nothing', async () => {
    const cases: Array<[string[], string]> = [
      [['--replicas', '3'], '--replicas is only used with --ha'],
      [['--etcd-members=5'], '--etcd-members is only used with --ha'],
      [['--ha', '--replicas', '1'], '--replicas must be a whole number from 2 to 100, got "1"'],
      [['--ha', '--etcd-members', '0'], '--etcd-members must be a whole number from 1 to 9, got "0"'],
      [['--ha', '--etcd-members', 'three'], '--etcd-members must be a whole number from 1 to 9, got "three"'],
      [['--ha', '--local-port', '8443'], '--local-port and --ha do not go together'],
      [['--ha=yes'], '--ha takes no value or =true|false, got "yes"'],
      [['--ha', '--replicas'], '--replicas needs a value'],
    ];
    const results = await Promise.all(cases.map(([args]) => run('scripts/manifests.ts', ['--cert-dir', join(tmp, 'never'), ...args])));
    results.forEach((r, i) => {
      const [args, message] = cases[i]!;
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      const lines = r.stderr.split('\n').filter((l) => l !== '');
      assert.equal(lines.length, 1, r.stderr);
      assert.ok(lines[0]!.startsWith(`manifests: ${message}`), `${args.join(' ')}: ${lines[0]}`);
    });
    assert.throws(() => statSync(join(tmp, 'never')), /ENOENT/);
  });
});

describe('ensureEtcdCerts', () => {
  const t = haTopology(HA_DEFAULTS);
  const pem = (dir: string, f: string) => readFileSync(join(dir, 'etcd', f), 'utf8');

  it('signs server, peer and client certificates that etcd and its clients accept', () => {
    const ca = new X509Certificate(pem(certDir, 'ca.crt'));
    assert.equal(ca.ca, true);
    for (const leaf of ETCD_LEAVES) {
      const c = new X509Certificate(pem(certDir, `${leaf}.crt`));
      assert.equal(c.ca, false, leaf);
      assert.ok(c.checkIssued(ca) && c.verify(ca.publicKey), `${leaf} not signed by the etcd CA`);
      // etcd's gRPC gateway dials its own client port with the server certificate; peers use theirs both ways.
      assert.deepEqual([...(c.keyUsage ?? [])].sort(), leaf === 'client' ? [CLIENT_AUTH] : [SERVER_AUTH, CLIENT_AUTH], leaf);
    }
    for (const leaf of ['server', 'peer']) {
      const c = new X509Certificate(pem(certDir, `${leaf}.crt`));
      for (const h of [...etcdMemberHosts(t), 'etcd.farm-system.svc', 'etcd-2.etcd.farm-system.svc.cluster.local', 'localhost']) assert.equal(c.checkHost(h), h, `${leaf}: ${h}`);
      assert.equal(c.checkIP('127.0.0.1'), '127.0.0.1', leaf);
      assert.equal(c.checkHost('etcd-3.etcd.farm-system.svc'), undefined, `${leaf} names a 4th member`);
    }
    assert.match(new X509Certificate(pem(certDir, 'client.crt')).subject, new RegExp(`CN=${ETCD_CLIENT_COMMON_NAME}`));
  });

  it('is idempotent, leaves the dev certificates alone, and keeps private keys private', async () => {
    const files = ['ca.crt', 'ca.key', 'tls.crt', 'tls.key', ...['ca', ...ETCD_LEAVES].flatMap((l) => [`etcd/${l}.crt`, `etcd/${l}.key`])];
    const before = files.map((f) => readFileSync(join(certDir, f), 'utf8'));
    const again = await ensureEtcdCerts(certDir, t);
    assert.equal(again.created, false);
    assert.deepEqual(files.map((f) => readFileSync(join(certDir, f), 'utf8')), before);
    for (const l of ['ca', ...ETCD_LEAVES]) assert.equal(statSync(join(certDir, 'etcd', `${l}.key`)).mode & 0o777, 0o600, l);
  });

  it('refuses certificates made for fewer members, naming what is missing; a removed pair is re-signed by the CA', async () => {
    const dir = join(tmp, 'grow');
    await ensureEtcdCerts(dir, t);
    const five = { ...t, members: 5 };
    await assert.rejects(ensureEtcdCerts(dir, five), (e: Error) => {
      assert.match(e.message, /server\.crt does not name etcd-3\.etcd\.farm-system\.svc, etcd-4\.etcd\.farm-system\.svc .*remove server\.crt and server\.key/);
      return true;
    });
    const caBefore = pem(dir, 'ca.crt');
    for (const l of ['server', 'peer']) for (const ext of ['crt', 'key']) unlinkSync(join(dir, 'etcd', `${l}.${ext}`));
    const r = await ensureEtcdCerts(dir, five);
    assert.equal(r.created, true);
    assert.equal(pem(dir, 'ca.crt'), caBefore);
    const server = new X509Certificate(pem(dir, 'server.crt'));
    assert.ok(server.checkIssued(new X509Certificate(caBefore)));
    assert.equal(server.checkHost('etcd-4.etcd.farm-system.svc'), 'etcd-4.etcd.farm-system.svc');
  });

  it('refuses a partial set it cannot complete, naming the missing files, and writes nothing', async () => {
    const lone = join(tmp, 'lone');
    await ensureEtcdCerts(lone, t);
    unlinkSync(join(lone, 'etcd', 'client.key'));
    await assert.rejects(ensureEtcdCerts(lone, t), /incomplete etcd certificates in .*lone\/etcd: found .* but not client\.key;/);
    const noCaKey = join(tmp, 'no-ca-key');
    await ensureEtcdCerts(noCaKey, t);
    for (const f of ['ca.key', 'peer.crt', 'peer.key']) unlinkSync(join(noCaKey, 'etcd', f));
    await assert.rejects(ensureEtcdCerts(noCaKey, t), /but not ca\.key, peer\.crt, peer\.key;/);
    assert.throws(() => statSync(join(noCaKey, 'etcd', 'peer.crt')), /ENOENT/);
    // Everything but the CA key is a complete set: usable as is (the key may be kept offline).
    const offline = join(tmp, 'offline-ca');
    await ensureEtcdCerts(offline, t);
    unlinkSync(join(offline, 'etcd', 'ca.key'));
    assert.equal((await ensureEtcdCerts(offline, t)).created, false);
  });
});
