// Delegated authentication/authorization and the controllers that call us, against a real
// kube-apiserver 1.33 + kube-controller-manager. Requests go DIRECTLY to our server at
// https://127.0.0.1:<farmPort> (not through the aggregator), except where a controller is the caller.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:https';
import { stringify } from 'yaml';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { eventually, fingerprints, https, llama, makeCa, makeClientCert, type HttpsCall, type Pem } from './e2e.helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-auth-'));
let cluster: FarmCluster;

const GV = '/apis/farm.example.com/v1alpha';
const LIST = `${GV}/namespaces/default/llamas`;
const UNAUTHORIZED = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 };

before(async () => {
  cluster = await startFarmCluster({ dir: tmp, withControllerManager: true, farmArgs: ['--log-level', 'debug'], log: (l) => console.log(`[cluster] ${l}`) });
}, { timeout: 15 * 60_000 });

after(async () => {
  await cluster?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cluster] kept ${tmp}`);
});

/** A direct call to our server; `as` picks the TLS client identity. */
function farm(path: string, opts: Omit<HttpsCall, 'url' | 'ca'> & { as?: Pem } = {}) {
  const { as, ...rest } = opts;
  return https({ url: `https://127.0.0.1:${cluster.farmPort}${path}`, ca: join(cluster.farmCertDir, 'ca.crt'), ...(as ?? {}), ...rest });
}

const frontProxy = (): Pem => ({ cert: cluster.cp.frontProxy.clientCert, key: cluster.cp.frontProxy.clientKey });
const frontProxyCa = (): Pem => ({ cert: cluster.cp.frontProxy.ca, key: cluster.cp.frontProxy.ca.replace(/\.crt$/, '.key') });
/** The front proxy asserting a superuser identity (no SAR involved): for calls that test something else. */
const asMaster = () => ({ as: frontProxy(), headers: { 'X-Remote-User': 'root', 'X-Remote-Group': 'system:masters' } });

async function k(args: string[], input?: string): Promise<string> {
  const r = await cluster.kubectl(args, { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

async function grantListLlamas(bindingName: string, subject: Record<string, string>): Promise<void> {
  await k(['apply', '-f', '-'], [
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'llama-lister', namespace: 'default' },
      rules: [{ apiGroups: ['farm.example.com'], resources: ['llamas'], verbs: ['list'] }] }),
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: bindingName, namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'llama-lister' }, subjects: [subject] }),
  ].join('---\n'));
}

/** Requests our server logged (debug level): method, url and the authenticated user name. */
function loggedRequests(): Array<{ method: string; url: string; user?: string }> {
  const byId = new Map<string, { method: string; url: string; user?: string }>();
  for (const l of readFileSync(cluster.farmLog, 'utf8').split('\n')) {
    let o: { auditID?: string; msg?: string; req?: { method: string; url: string }; user?: { username: string } };
    try { o = JSON.parse(l); } catch { continue; }
    if (!o.auditID) continue;
    if (o.msg === 'incoming request' && o.req) byId.set(o.auditID, { method: o.req.method, url: o.req.url });
    if (o.msg === 'authenticated' && o.user && byId.has(o.auditID)) byId.get(o.auditID)!.user = o.user.username;
  }
  return [...byId.values()];
}

test('X-Remote-User without a client certificate is refused: 401 Status', async () => {
  // Stricter than k8s.io/apiserver, whose x509 Verifier returns "no opinion" without a peer cert, so the
  // request would fall through to anonymous (403 for system:anonymous); ours refuses the spoofing attempt.
  const attempts: Array<Record<string, string>> = [{ 'X-Remote-User': 'alice' }, { 'X-Remote-User': 'alice', 'X-Remote-Group': 'system:masters' }];
  for (const headers of attempts) {
    const r = await farm(LIST, { headers });
    assert.equal(r.status, 401, r.body);
    assert.deepEqual(r.json, UNAUTHORIZED);
  }
});

test('a front-proxy-CA certificate whose CN is not in requestheader-allowed-names cannot assert X-Remote-User: 401', async () => {
  const evil = await makeClientCert(frontProxyCa(), 'evil-proxy');
  const r = await farm(LIST, { as: evil, headers: { 'X-Remote-User': 'alice', 'X-Remote-Group': 'system:masters' } });
  assert.equal(r.status, 401, r.body);
  assert.deepEqual(r.json, UNAUTHORIZED);
  // and CN=front-proxy-client from a CA nobody trusts is no better
  const rogue = await makeClientCert(await makeCa('rogue-ca'), 'front-proxy-client');
  const r2 = await farm(LIST, { as: rogue, headers: { 'X-Remote-User': 'alice', 'X-Remote-Group': 'system:masters' } });
  assert.equal(r2.status, 401, r2.body);
  assert.deepEqual(r2.json, UNAUTHORIZED);
});

test('the front proxy asserting carol (no RBAC): 403 from our SubjectAccessReview, worded as upstream', async () => {
  const r = await farm(LIST, { as: frontProxy(), headers: { 'X-Remote-User': 'carol' } });
  assert.equal(r.status, 403, r.body);
  assert.deepEqual(r.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
    message: 'llamas.farm.example.com is forbidden: User "carol" cannot list resource "llamas" in API group "farm.example.com" in the namespace "default"',
    details: { group: 'farm.example.com', kind: 'llamas' },
  });
});

test('the front proxy asserting carol in group system:masters: 200', async () => {
  const r = await farm(LIST, { as: frontProxy(), headers: { 'X-Remote-User': 'carol', 'X-Remote-Group': ['devs', 'system:masters'] } });
  assert.equal(r.status, 200, r.body);
  assert.equal(r.json.kind, 'LlamaList');
  await eventually('our log to name carol', 5000, async () => loggedRequests().some((q) => q.user === 'carol' && q.url === LIST));
});

test('a ServiceAccount bearer token is checked with TokenReview (200); a bogus token is 401', async () => {
  await k(['create', 'serviceaccount', 'reader', '-n', 'default']);
  await grantListLlamas('reader-list-llamas', { kind: 'ServiceAccount', name: 'reader', namespace: 'default' });
  const token = (await k(['create', 'token', 'reader', '-n', 'default'])).trim();
  const r = await eventually('the reader token to list llamas', 15_000, async () => {
    const res = await farm(LIST, { headers: { Authorization: `Bearer ${token}` } });
    return res.status === 200 ? res : undefined;
  });
  assert.equal(r.json.kind, 'LlamaList');
  await eventually('our log to name the ServiceAccount', 5000, async () => loggedRequests().some((q) => q.user === 'system:serviceaccount:default:reader'));

  const bogus = await farm(LIST, { headers: { Authorization: 'Bearer not-a-real-token' } });
  assert.equal(bogus.status, 401, bogus.body);
  assert.deepEqual(bogus.json, UNAUTHORIZED);
  // a well-formed but tampered JWT too
  const [h, p] = token.split('.');
  const forged = await farm(LIST, { headers: { Authorization: `Bearer ${h}.${p}.${Buffer.from('forged').toString('base64url')}` } });
  assert.equal(forged.status, 401, forged.body);
});

test('alice\'s client certificate (cluster client CA) authenticates as alice: 403, then 200 once a RoleBinding grants', async (t) => {
  const alice = cluster.cp.clientCert('alice');
  const as = { cert: alice.cert, key: alice.key };
  const denied = await farm(LIST, { as });
  assert.equal(denied.status, 403, denied.body);
  assert.equal(denied.json.message, 'llamas.farm.example.com is forbidden: User "alice" cannot list resource "llamas" in API group "farm.example.com" in the namespace "default"');

  const granted = Date.now();
  await grantListLlamas('alice-list-llamas', { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' });
  const ok = await eventually('alice to be allowed (SAR deny cache is 10 s)', 15_000, async () => {
    const r = await farm(LIST, { as });
    return r.status === 200 ? r : undefined;
  }, 500);
  t.diagnostic(`alice allowed ${Date.now() - granted} ms after the RoleBinding`);
  assert.equal(ok.json.kind, 'LlamaList');
});

test('namespace lifecycle: creating in a missing namespace is 404 namespaces "nope" not found', async () => {
  const r = await farm(`${GV}/namespaces/nope/llamas`, { ...asMaster(), method: 'POST', body: llama('x', 'nope') });
  assert.equal(r.status, 404, r.body);
  assert.deepEqual(r.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'NotFound', code: 404,
    message: 'namespaces "nope" not found', details: { name: 'nope', kind: 'namespaces' },
  });
});

test('namespace lifecycle: creating in a Terminating namespace is 403 with cause NamespaceTerminating', async () => {
  await k(['create', 'namespace', 'doomed']);
  // a ConfigMap with a finalizer keeps the namespace Terminating
  await k(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hold', namespace: 'doomed', finalizers: ['example.com/hold'] } }));
  await k(['delete', 'namespace', 'doomed', '--wait=false']);
  await eventually('namespace doomed to be Terminating', 15_000, async () => (await k(['get', 'namespace', 'doomed', '-o', 'jsonpath={.status.phase}'])) === 'Terminating');

  const r = await farm(`${GV}/namespaces/doomed/llamas`, { ...asMaster(), method: 'POST', body: llama('late', 'doomed') });
  assert.equal(r.status, 403, r.body);
  assert.deepEqual(r.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
    message: 'llamas.farm.example.com "late" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    details: { name: 'late', group: 'farm.example.com', kind: 'llamas',
      causes: [{ reason: 'NamespaceTerminating', message: 'namespace doomed is being terminated', field: 'metadata.namespace' }] },
  });
  // let it go (the namespace controller finishes in the background)
  await k(['patch', 'configmap', 'hold', '-n', 'doomed', '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']);
});

test('deleting a namespace that holds llamas completes within 60 s (the namespace controller deletes them through us)', async (t) => {
  await k(['create', 'namespace', 'pasture']);
  for (const n of ['a', 'b', 'c']) await k(['create', '-f', '-'], JSON.stringify(llama(n, 'pasture')));
  assert.equal((await k(['get', 'llamas', '-n', 'pasture', '-o', 'name'])).trim().split('\n').length, 3);

  const start = Date.now();
  await k(['delete', 'namespace', 'pasture', '--wait=false']);
  const w = await cluster.kubectl(['wait', '--for=delete', 'namespace/pasture', '--timeout=60s'], { timeoutMs: 70_000 });
  assert.equal(w.code, 0, `namespace pasture still there after 60 s: ${w.stderr}\n${(await cluster.kubectl(['get', 'namespace', 'pasture', '-o', 'yaml'])).stdout}`);
  t.diagnostic(`namespace pasture deleted in ${Date.now() - start} ms`);

  const left = await farm(`${GV}/namespaces/pasture/llamas`, asMaster());
  assert.equal(left.status, 200, left.body);
  assert.deepEqual(left.json.items, []);
  // the namespace controller (as system:kube-controller-manager, through the aggregator) sent the DELETE(s)
  const deletes = await eventually('our log to show DELETEs of pasture\'s llamas', 5000, async () => {
    const d = loggedRequests().filter((q) => q.method === 'DELETE' && q.url.startsWith(`${GV}/namespaces/pasture/llamas`));
    return d.length > 0 && d.every((q) => q.user) ? d : undefined;
  });
  assert.ok(deletes.every((q) => q.user === 'system:kube-controller-manager'), JSON.stringify(deletes));
});

test('a llama owned by a ConfigMap is garbage collected within 60 s after the ConfigMap is deleted', async (t) => {
  const cm = JSON.parse(await k(['create', 'configmap', 'owner', '-n', 'default', '-o', 'json'])) as { metadata: { uid: string } };
  const owned = llama('owned', 'default', { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: cm.metadata.uid }] });
  const created = await farm(`${GV}/namespaces/default/llamas`, { ...asMaster(), method: 'POST', body: owned });
  assert.equal(created.status, 201, created.body);

  const start = Date.now();
  await k(['delete', 'configmap', 'owner', '-n', 'default']);
  await eventually('the garbage collector to delete llama owned', 60_000, async () =>
    (await farm(`${GV}/namespaces/default/llamas/owned`, asMaster())).status === 404, 500);
  t.diagnostic(`llama owned collected ${Date.now() - start} ms after its owner was deleted`);
  // the garbage collector (as system:kube-controller-manager, through the aggregator) sent the DELETE
  await eventually('our log to show the garbage collector\'s DELETE', 5000, async () => loggedRequests()
    .some((q) => q.method === 'DELETE' && q.url.startsWith(`${GV}/namespaces/default/llamas/owned`) && q.user === 'system:kube-controller-manager'));
});

test('rotating the requestheader CA in extension-apiserver-authentication is picked up without a restart', async (t) => {
  const cmArgs = ['-n', 'kube-system', 'get', 'configmap', 'extension-apiserver-authentication', '-o', 'json'];
  type Cm = { metadata: { resourceVersion: string }; data: Record<string, string> };
  const getCm = async () => JSON.parse(await k(cmArgs)) as Cm;
  const [oldCa] = fingerprints(readFileSync(cluster.cp.frontProxy.ca, 'utf8'));
  const newCa = await makeCa('rotated-front-proxy-ca');
  const newProxy = await makeClientCert(newCa, 'front-proxy-client');
  const asMasterVia = (as: Pem) => farm(LIST, { as, headers: { 'X-Remote-User': 'root', 'X-Remote-Group': 'system:masters' } });

  assert.equal((await asMasterVia(newProxy)).status, 401, 'the new CA is not trusted before the rotation');
  assert.equal((await asMasterVia(frontProxy())).status, 200);
  // One kept-alive connection with the old certificate, open across the rotation: its verdict was made
  // (and is kept per connection) before, and must not outlive the bundle it was made against.
  const fp = frontProxy();
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => kept.destroy());
  const onKept = () => farm(LIST, { as: fp, agent: kept, headers: { 'X-Remote-User': 'root', 'X-Remote-Group': 'system:masters' } });
  const keptBefore = await onKept();
  assert.equal(keptBefore.status, 200);
  const original = await getCm();
  assert.deepEqual(fingerprints(original.data['requestheader-client-ca-file']), [oldCa]);

  // Replace the bundle with the new CA only. kube-apiserver's cluster_authentication_trust_controller
  // re-merges its own --requestheader-client-ca-file into this ConfigMap on its once-a-minute resync,
  // so the new-only window is at most ~60 s: if it closes before the checks below, patch again.
  let patchedAt = 0;
  let patchedRv = '';
  for (let attempt = 1; ; attempt++) {
    const patched = JSON.parse(await k(['-n', 'kube-system', 'patch', 'configmap', 'extension-apiserver-authentication', '--type', 'merge',
      '-p', JSON.stringify({ data: { 'requestheader-client-ca-file': newCa.cert } }), '-o', 'json'])) as Cm;
    patchedAt = Date.now();
    patchedRv = patched.metadata.resourceVersion;
    await eventually('our server to accept a front-proxy-client cert of the new CA', 15_000, async () => (await asMasterVia(newProxy)).status === 200);
    const pickedUp = Date.now() - patchedAt;
    const old = await asMasterVia(frontProxy());
    const cm = await getCm();
    if (cm.metadata.resourceVersion !== patchedRv) {
      t.diagnostic(`attempt ${attempt}: kube-apiserver rewrote the ConfigMap during the check; retrying`);
      assert.ok(attempt < 3, 'the ConfigMap kept being rewritten');
      continue;
    }
    t.diagnostic(`new CA accepted ${pickedUp} ms after the patch`);
    assert.equal(old.status, 401, `the old front-proxy cert must be refused once its CA left the bundle: ${old.body}`);
    assert.deepEqual(old.json, UNAUTHORIZED);
    const keptAfter = await onKept();
    assert.equal(keptAfter.localPort, keptBefore.localPort, 'the same connection as before the rotation');
    assert.equal(keptAfter.status, 401, 'the old certificate is refused on a connection opened before the rotation');
    break;
  }

  // Observe kube-apiserver restoring its own CA (union of both), and our server following it.
  const merged = await eventually('kube-apiserver to merge its front-proxy CA back into the ConfigMap', 75_000, async () => {
    const cm = await getCm();
    return fingerprints(cm.data['requestheader-client-ca-file']).includes(oldCa) ? cm : undefined;
  }, 1000);
  t.diagnostic(`kube-apiserver re-added its CA ${Date.now() - patchedAt} ms after the patch`);
  assert.deepEqual(fingerprints(merged.data['requestheader-client-ca-file']).sort(), [oldCa, ...fingerprints(newCa.cert)].sort(), 'the merge keeps the new CA too');
  await eventually('our server to accept the original front-proxy cert again', 15_000, async () => (await asMasterVia(frontProxy())).status === 200);
  assert.equal((await asMasterVia(newProxy)).status, 200, 'both CAs are trusted after the merge');
});
