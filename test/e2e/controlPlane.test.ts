// Proves the real-cluster harness works: etcd + kube-apiserver 1.33 (+ controller manager),
// RBAC, client-cert users, and the aggregation-layer wiring our server relies on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, type ControlPlane } from '../cluster/controlPlane.js';

const run = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), 'farm-cp-'));
const home = join(tmp, 'home');
mkdirSync(home);
let cp: ControlPlane;

async function kubectl(kubeconfig: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run('kubectl', ['--kubeconfig', kubeconfig, ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home }, timeout: 30_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

before(async () => {
  cp = await startControlPlane({ dir: join(tmp, 'cluster'), withControllerManager: true, log: (l) => console.log(`[cp] ${l}`) });
}, { timeout: 40 * 60_000 }); // a cold build of the binaries takes a while

after(async () => {
  await cp?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
});

test('/version reports kube-apiserver v1.33.x', async () => {
  const r = await kubectl(cp.adminKubeconfig, 'get', '--raw', '/version');
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout) as { gitVersion: string; major: string; minor: string };
  assert.match(v.gitVersion, /^v1\.33\.\d+$/);
  assert.equal(v.major, '1');
  assert.equal(v.minor, '33');
});

test('admin can list namespaces with real kubectl', async () => {
  const r = await kubectl(cp.adminKubeconfig, 'get', 'ns', '-o', 'name');
  assert.equal(r.code, 0, r.stderr);
  for (const ns of ['namespace/default', 'namespace/kube-system']) assert.ok(r.stdout.includes(ns), r.stdout);
});

test('alice (O=testers) is forbidden to list pods by RBAC', async () => {
  const r = await kubectl(cp.kubeconfigFor('alice'), 'get', 'pods', '-n', 'default');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /pods is forbidden: User "alice" cannot list resource "pods"/);
  const who = await kubectl(cp.kubeconfigFor('alice'), 'auth', 'whoami', '-o', 'json');
  assert.equal(who.code, 0, who.stderr);
  const groups = (JSON.parse(who.stdout) as { status: { userInfo: { groups: string[] } } }).status.userInfo.groups;
  assert.deepEqual(groups.sort(), ['system:authenticated', 'testers']);
});

test('farm-apiserver identity authenticates (and has no permissions yet)', async () => {
  const r = await kubectl(cp.kubeconfigFor('farm-apiserver'), 'auth', 'can-i', 'list', 'namespaces');
  assert.equal(r.stdout.trim(), 'no');
});

test('extension-apiserver-authentication ConfigMap carries the front-proxy settings', async () => {
  let data: Record<string, string> = {};
  for (let i = 0; i < 40 && !data['requestheader-client-ca-file']; i++) {
    const r = await kubectl(cp.adminKubeconfig, 'get', 'configmap', '-n', 'kube-system', 'extension-apiserver-authentication', '-o', 'json');
    if (r.code === 0) data = (JSON.parse(r.stdout) as { data: Record<string, string> }).data;
    else await new Promise((res) => setTimeout(res, 250));
  }
  assert.match(data['requestheader-client-ca-file'] ?? '', /BEGIN CERTIFICATE/);
  assert.match(data['client-ca-file'] ?? '', /BEGIN CERTIFICATE/);
  assert.equal(data['requestheader-allowed-names'], '["front-proxy-client"]');
  assert.equal(data['requestheader-username-headers'], '["X-Remote-User"]');
  assert.equal(data['requestheader-group-headers'], '["X-Remote-Group"]');
  assert.equal(data['requestheader-extra-headers-prefix'], '["X-Remote-Extra-"]');
});

test('controller manager deletes a namespace (namespace controller runs)', async () => {
  assert.equal((await kubectl(cp.adminKubeconfig, 'create', 'namespace', 'doomed')).code, 0);
  const sa = await waitFor(async () => (await kubectl(cp.adminKubeconfig, 'get', 'serviceaccount', 'default', '-n', 'doomed')).code === 0, 30_000);
  assert.ok(sa, 'serviceaccount controller created the default ServiceAccount');
  const del = await kubectl(cp.adminKubeconfig, 'delete', 'namespace', 'doomed', '--timeout=60s');
  assert.equal(del.code, 0, del.stderr);
  const r = await kubectl(cp.adminKubeconfig, 'get', 'namespace', 'doomed');
  assert.match(r.stderr, /NotFound/);
});

test('restartApiserver keeps data and serves again on the same URL', async () => {
  assert.equal((await kubectl(cp.adminKubeconfig, 'create', 'configmap', 'survivor', '--from-literal=a=b')).code, 0);
  for (const hard of [false, true]) {
    await cp.restartApiserver({ hard });
    const r = await kubectl(cp.adminKubeconfig, 'get', 'configmap', 'survivor', '-o', 'jsonpath={.data.a}');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'b');
  }
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((res) => setTimeout(res, 300));
  }
  return false;
}
