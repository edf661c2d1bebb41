// "Sample API Server using the current Aggregator" (kubernetes test/e2e/apimachinery/aggregator.go and
// test/integration/examples/apiserver_test.go), for llamas: a real kube-apiserver 1.33 with our server
// registered as an APIService, driven with the real kubectl and raw HTTPS through kube-apiserver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { renderManifests } from '../../scripts/manifests.js';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { authenticatedUsers, eventually, https, llama, spawnKubectl, type LoggedUser } from './e2e.helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-agg-'));
let cluster: FarmCluster;

const GV = '/apis/farm.example.com/v1alpha';
const AGGREGATED_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

before(async () => {
  // debug level: src/server/server.ts logs the authenticated user of every request (read by the identity tests)
  cluster = await startFarmCluster({ dir: tmp, farmArgs: ['--log-level', 'debug'], log: (l) => console.log(`[cluster] ${l}`) });
}, { timeout: 15 * 60_000 });

after(async () => {
  await cluster?.stop();
  if (!process.env.FARM_KEEP_CLUSTER_DIR) rmSync(tmp, { recursive: true, force: true });
  else console.log(`[cluster] kept ${tmp}`);
});

/** kubectl that must succeed; returns stdout. */
async function k(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Promise<string> {
  const r = await cluster.kubectl(args, opts);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/** A raw call to kube-apiserver as admin (client cert, O=system:masters). */
function viaApiserver(method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
  const admin = cluster.cp.clientCert('admin');
  return https({ url: `${cluster.cp.apiserverUrl}${path}`, method, ca: cluster.cp.clusterCa, cert: admin.cert, key: admin.key, ...opts });
}

test('app.yaml, rendered with the real caBundle, passes kubectl apply --dry-run=server', async () => {
  const manifests = renderManifests({ certDir: cluster.farmCertDir });
  const kinds = manifests.split(/^---$/m).map((d) => (parseYaml(d) as { kind: string; metadata: { name: string } }));
  const r = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: manifests });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, kinds.length, r.stdout);
  for (const l of lines) assert.match(l, /\(server dry run\)$/);
  for (const want of ['deployment.apps/farm-apiserver', 'secret/farm-apiserver-tls', 'apiservice.apiregistration.k8s.io/v1alpha.farm.example.com',
    'clusterrolebinding.rbac.authorization.k8s.io/farm-apiserver:system:auth-delegator',
    'rolebinding.rbac.authorization.k8s.io/farm-apiserver:extension-apiserver-authentication-reader']) {
    assert.ok(lines.some((l) => l.startsWith(`${want} `)), `${want} missing from:\n${r.stdout}`);
  }
});

test('the APIService is Available=True, reason Passed, "all checks passed"', async () => {
  const svc = JSON.parse(await k(['get', 'apiservice', 'v1alpha.farm.example.com', '-o', 'json'])) as {
    spec: { caBundle?: string; insecureSkipTLSVerify?: boolean }; status: { conditions: Array<{ type: string; status: string; reason: string; message: string }> };
  };
  const available = svc.status.conditions.find((c) => c.type === 'Available');
  assert.deepEqual(available && { status: available.status, reason: available.reason, message: available.message },
    { status: 'True', reason: 'Passed', message: 'all checks passed' });
  assert.equal(Buffer.from(svc.spec.caBundle ?? '', 'base64').toString(), readFileSync(join(cluster.farmCertDir, 'ca.crt'), 'utf8'));
  assert.notEqual(svc.spec.insecureSkipTLSVerify, true);
});

test('discovery through the aggregator lists exactly llamas and farmpods', async () => {
  const names = (await k(['api-resources', '--api-group=farm.example.com', '-o', 'name'])).trim().split('\n').sort();
  assert.deepEqual(names, ['farmpods.farm.example.com', 'llamas.farm.example.com']);

  // aggregated discovery (kube-apiserver's merged /apis document)
  const agg = await viaApiserver('GET', '/apis', { headers: { Accept: AGGREGATED_ACCEPT } });
  assert.equal(agg.status, 200, agg.body);
  assert.match(String(agg.headers['content-type']), /g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/);
  type Res = { resource: string; scope: string; verbs: string[]; responseKind: { kind: string }; subresources?: { subresource: string; verbs: string[] }[] };
  const group = (agg.json.items as Array<{ metadata: { name: string }; versions: Array<{ version: string; freshness?: string; resources: Res[] }> }>)
    .find((g) => g.metadata.name === 'farm.example.com');
  assert.ok(group, 'farm.example.com missing from aggregated discovery');
  assert.deepEqual(group.versions.map((v) => v.version), ['v1alpha']);
  assert.equal(group.versions[0].freshness, 'Current');
  const byName = new Map(group.versions[0].resources.map((r) => [r.resource, r]));
  assert.deepEqual([...byName.keys()].sort(), ['farmpods', 'llamas']);
  assert.equal(byName.get('llamas')!.responseKind.kind, 'Llama');
  assert.equal(byName.get('llamas')!.scope, 'Namespaced');
  assert.deepEqual([...byName.get('llamas')!.verbs].sort(), ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  assert.deepEqual([...byName.get('farmpods')!.verbs].sort(), ['get', 'list', 'watch']);
  assert.deepEqual(byName.get('llamas')!.subresources?.map((r) => [r.subresource, r.verbs]), [['status', ['get', 'patch', 'update']]]);
  assert.equal(byName.get('farmpods')!.subresources, undefined);

  // the proxied group-version document, served by us
  const list = JSON.parse(await k(['get', '--raw', GV])) as { kind: string; groupVersion: string; resources: Array<{ name: string }> };
  assert.equal(list.kind, 'APIResourceList');
  assert.equal(list.groupVersion, 'farm.example.com/v1alpha');
  assert.deepEqual(list.resources.map((r) => r.name).sort(), ['farmpods', 'llamas', 'llamas/status']);
});

test('kubectl explain llama.spec works through the aggregator (OpenAPI v3)', async () => {
  // The aggregator fetches our OpenAPI v3 document on its own schedule after the APIService turns
  // Available; until then kubectl "couldn't find resource" (seen under load). Retry, bounded.
  const out = await eventually('kubectl explain llama.spec to find the schema', 60_000, async () => {
    const r = await cluster.kubectl(['explain', 'llama.spec']);
    return r.code === 0 ? r.stdout : undefined;
  }, 1000);
  assert.match(out, /KIND:\s+Llama/);
  assert.match(out, /VERSION:\s+v1alpha/);
  assert.match(out, /FIELD:\s+spec <Object>/);
  for (const f of ['weight', 'height', 'color', 'favoriteFood', 'shorn']) assert.match(out, new RegExp(`^\\s+${f}\\s`, 'm'), out);
});

test('as admin: create (201), get, list, watch, update, patch and delete llamas through the aggregator', async (t) => {
  const ns = 'default';
  // create with kubectl: the server answered 201
  const created = await cluster.kubectl(['create', '-f', '-', '-o', 'json', '-v=6'], { input: JSON.stringify(llama('dolly', ns)) });
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stderr, /POST.*\/apis\/farm\.example\.com\/v1alpha\/namespaces\/default\/llamas\?.*201 Created/);
  const dolly = JSON.parse(created.stdout) as { kind: string; metadata: { name: string; uid: string; resourceVersion: string; creationTimestamp: string }; spec: Record<string, unknown> };
  assert.equal(dolly.kind, 'Llama');
  assert.equal(dolly.metadata.name, 'dolly');
  assert.ok(dolly.metadata.uid && dolly.metadata.resourceVersion && dolly.metadata.creationTimestamp, JSON.stringify(dolly.metadata));
  assert.deepEqual(dolly.spec, { weight: 120, height: 1.7, color: 'white', shorn: false });

  // create with a raw POST through kube-apiserver
  const raw = await viaApiserver('POST', `${GV}/namespaces/${ns}/llamas`, { body: llama('raw-llama', ns, { spec: { color: 'black' } }) });
  assert.equal(raw.status, 201, raw.body);
  assert.equal(raw.json.kind, 'Llama');
  assert.equal(raw.json.metadata.name, 'raw-llama');
  assert.equal(raw.json.spec.color, 'black');

  // kubectl get -w: lists (items shown as ADDED), then watches from the list's resourceVersion
  const watch = spawnKubectl(['get', 'llamas', '-n', ns, '-w', '--output-watch-events'], { kubeconfig: cluster.cp.adminKubeconfig, home: join(tmp, 'home') });
  t.after(() => watch.stop());
  await watch.waitFor(/^ADDED\s+dolly\s/m, 15_000);

  // get
  const got = JSON.parse(await k(['get', 'llama', 'dolly', '-n', ns, '-o', 'json']));
  assert.equal(got.metadata.uid, dolly.metadata.uid);
  assert.deepEqual(got.spec, dolly.spec);

  // list: a LlamaList with a non-empty resourceVersion
  const list = await viaApiserver('GET', `${GV}/namespaces/${ns}/llamas`);
  assert.equal(list.status, 200, list.body);
  assert.equal(list.json.kind, 'LlamaList');
  assert.equal(list.json.apiVersion, 'farm.example.com/v1alpha');
  assert.equal(typeof list.json.metadata.resourceVersion, 'string');
  assert.notEqual(list.json.metadata.resourceVersion, '');
  assert.deepEqual((list.json.items as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name).sort(), ['dolly', 'raw-llama']);
  const names = (await k(['get', 'llamas', '-n', ns, '-o', 'name'])).trim().split('\n').sort();
  assert.deepEqual(names, ['llama.farm.example.com/dolly', 'llama.farm.example.com/raw-llama']);

  // update (kubectl replace: PUT of the whole object, with its resourceVersion)
  const replaced = await k(['replace', '-f', '-', '-o', 'json'], { input: JSON.stringify({ ...got, spec: { ...got.spec, weight: 150, favoriteFood: 'hay' } }) });
  const afterReplace = JSON.parse(replaced);
  assert.equal(afterReplace.spec.weight, 150);
  assert.equal(afterReplace.spec.favoriteFood, 'hay');
  assert.notEqual(afterReplace.metadata.resourceVersion, got.metadata.resourceVersion);
  await watch.waitFor(/^MODIFIED\s+dolly\s+white\s+150\s/m, 15_000);
  // a stale resourceVersion is a 409 Conflict, proxied unchanged
  const stale = await cluster.kubectl(['replace', '-f', '-'], { input: JSON.stringify({ ...got, spec: { ...got.spec, weight: 99 } }) });
  assert.notEqual(stale.code, 0);
  assert.match(stale.stderr, /Operation cannot be fulfilled on llamas\.farm\.example\.com "dolly": the object has been modified; please apply your changes to the latest version and try again/);

  // patch (merge)
  const patched = JSON.parse(await k(['patch', 'llama', 'dolly', '-n', ns, '--type', 'merge', '-p', '{"spec":{"color":"brown"}}', '-o', 'json']));
  assert.equal(patched.spec.color, 'brown');
  assert.equal(patched.spec.weight, 150);
  await watch.waitFor(/^MODIFIED\s+dolly\s+brown\s/m, 15_000);

  // delete
  assert.match(await k(['delete', 'llama', 'dolly', '-n', ns]), /llama\.farm\.example\.com "dolly" deleted/);
  await watch.waitFor(/^DELETED\s+dolly\s/m, 15_000);
  const gone = await cluster.kubectl(['get', 'llama', 'dolly', '-n', ns]);
  assert.notEqual(gone.code, 0);
  assert.match(gone.stderr, /\(NotFound\): llamas\.farm\.example\.com "dolly" not found/);
  const rawGone = await viaApiserver('GET', `${GV}/namespaces/${ns}/llamas/dolly`);
  assert.equal(rawGone.status, 404);
  assert.equal(rawGone.json.reason, 'NotFound');

  assert.match(await k(['delete', 'llama', 'raw-llama', '-n', ns]), /deleted/);
  // the watch saw, in order: ADDED, MODIFIED (replace), MODIFIED (patch), DELETED for dolly
  const events = watch.stdout().split('\n').filter((l) => /^\w+\s+dolly\s/.test(l)).map((l) => l.split(/\s+/)[0]);
  assert.deepEqual(events, ['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED'], watch.stdout());
});

/** What kube-apiserver thinks the caller is (SelfSubjectReview). */
async function whoami(kubeconfig: string, extraArgs: string[] = []): Promise<LoggedUser> {
  const r = JSON.parse(await k([...extraArgs, 'auth', 'whoami', '-o', 'json'], { kubeconfig })) as { status: { userInfo: LoggedUser } };
  return r.status.userInfo;
}

const normal = (u: LoggedUser) => ({ username: u.username, uid: u.uid || undefined, groups: u.groups, extra: u.extra ?? {} });

async function grantListLlamas(bindingName: string, subject: { kind: 'User' | 'Group'; name: string }): Promise<void> {
  await k(['apply', '-f', '-'], { input: [
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'llama-lister', namespace: 'default' },
      rules: [{ apiGroups: ['farm.example.com'], resources: ['llamas'], verbs: ['list'] }] }),
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: bindingName, namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'llama-lister' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', ...subject }] }),
  ].join('---\n') });
}

const LIST_URL = /^\/apis\/farm\.example\.com\/v1alpha\/namespaces\/default\/llamas\?/;

test('kube-apiserver talks HTTP/2 to us and multiplexes concurrent requests and watches over few connections', async () => {
  const ns = 'default';
  const url = new RegExp(`^${GV}/namespaces/${ns}/llamas\\?.*h2probe`);
  // 30 concurrent LISTs and 5 watches through the aggregator, each on its own client connection to kube-apiserver.
  const watches = Array.from({ length: 5 }, (_, i) => viaApiserver('GET', `${GV}/namespaces/${ns}/llamas?watch=1&timeoutSeconds=2&labelSelector=h2probe%3Dw${i}`));
  const lists = await Promise.all(Array.from({ length: 30 }, (_, i) => viaApiserver('GET', `${GV}/namespaces/${ns}/llamas?labelSelector=h2probe%3Dl${i}`)));
  for (const l of lists) assert.equal(l.status, 200, l.body);
  for (const w of await Promise.all(watches)) assert.equal(w.status, 200, w.body);
  const seen = await eventually('our log to show the 35 proxied requests', 10_000, async () => {
    const r = authenticatedUsers(cluster.farmLog, url);
    return r.length >= 35 ? r : undefined;
  });
  assert.deepEqual([...new Set(seen.map((r) => r.httpVersion))], ['2.0'], 'every proxied request arrived over HTTP/2');
  const connections = new Set(seen.map((r) => r.remotePort)).size;
  assert.ok(connections <= 3, `35 concurrent requests came over ${connections} connections, expected them multiplexed on few`);
});

test('the user, groups and extra reaching our SubjectAccessReview are the impersonated caller\'s', async () => {
  // list is granted to the GROUP devs only, never to bob
  await grantListLlamas('devs-list-llamas', { kind: 'Group', name: 'devs' });

  const without = await cluster.kubectl(['--as=bob', '--as-group=system:authenticated', 'get', 'llamas', '-n', 'default']);
  assert.notEqual(without.code, 0, 'bob without the group devs must be refused');
  assert.match(without.stderr, /llamas\.farm\.example\.com is forbidden: User "bob" cannot list resource "llamas" in API group "farm\.example\.com" in the namespace "default"/);

  const before = authenticatedUsers(cluster.farmLog, LIST_URL).length;
  // kube-apiserver's RBAC lets it through (devs), and so must our SAR: only the forwarded group allows it
  const withGroup = await eventually('bob in group devs may list llamas', 15_000, async () => {
    const r = await cluster.kubectl(['--as=bob', '--as-group=devs', '--as-group=system:authenticated', 'get', 'llamas', '-n', 'default', '-o', 'name']);
    return r.code === 0 ? r : undefined;
  });
  assert.equal(withGroup.stdout.trim(), '');

  // extra: kubectl 1.32 has no --as-user-extra flag; the kubeconfig field `as-user-extra` does the same
  const kc = parseYaml(readFileSync(cluster.cp.adminKubeconfig, 'utf8')) as { users: Array<{ user: Record<string, unknown> }> };
  Object.assign(kc.users[0].user, { as: 'bob', 'as-groups': ['devs', 'system:authenticated'], 'as-user-extra': { scopes: ['foo', 'bar'], 'example.com/team': ['farm'] } });
  const impersonating = join(tmp, 'bob-impersonation.kubeconfig');
  writeFileSync(impersonating, stringify(kc), { mode: 0o600 });
  await k(['get', 'llamas', '-n', 'default'], { kubeconfig: impersonating });
  const asSeenByApiserver = await whoami(impersonating);
  assert.deepEqual(normal(asSeenByApiserver), {
    username: 'bob', uid: undefined, groups: ['devs', 'system:authenticated'], extra: { scopes: ['foo', 'bar'], 'example.com/team': ['farm'] },
  });

  const seen = await eventually('our log to show both requests of bob', 5000, async () => {
    const bob = authenticatedUsers(cluster.farmLog, LIST_URL).slice(before).filter((e) => e.user.username === 'bob');
    return bob.length >= 2 ? bob : undefined;
  });
  assert.deepEqual(normal(seen[0].user), { username: 'bob', uid: undefined, groups: ['devs', 'system:authenticated'], extra: {} });
  assert.deepEqual(normal(seen[seen.length - 1].user), normal(asSeenByApiserver));
});

test('a client-certificate user (alice, O=testers) reaches our SubjectAccessReview as herself', async () => {
  const alice = cluster.cp.kubeconfigFor('alice');
  const denied = await cluster.kubectl(['get', 'llamas', '-n', 'default'], { kubeconfig: alice });
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /User "alice" cannot list resource "llamas" in API group "farm\.example\.com" in the namespace "default"/);

  await grantListLlamas('alice-list-llamas', { kind: 'User', name: 'alice' });
  const before = authenticatedUsers(cluster.farmLog, LIST_URL).length;
  await eventually('alice may list llamas', 15_000, async () => (await cluster.kubectl(['get', 'llamas', '-n', 'default'], { kubeconfig: alice })).code === 0);

  const asSeenByApiserver = await whoami(alice);
  assert.equal(asSeenByApiserver.username, 'alice');
  assert.deepEqual(asSeenByApiserver.groups, ['testers', 'system:authenticated']);
  assert.match(asSeenByApiserver.extra?.['authentication.kubernetes.io/credential-id']?.[0] ?? '', /^X509SHA256=[0-9a-f]{64}$/);
  const seen = await eventually('our log to show alice', 5000, async () => {
    const a = authenticatedUsers(cluster.farmLog, LIST_URL).slice(before).filter((e) => e.user.username === 'alice');
    return a.length ? a : undefined;
  });
  assert.deepEqual(normal(seen[seen.length - 1].user), normal(asSeenByApiserver));
});

test('RBAC on llamas/status: a user granted only that can write /status (our SubjectAccessReview names the subresource), not the llama', async () => {
  const ns = 'default';
  const name = 'status-rbac';
  const created = await viaApiserver('POST', `${GV}/namespaces/${ns}/llamas`, { body: llama(name, ns) });
  assert.equal(created.status, 201, created.body);
  await k(['apply', '-f', '-'], { input: [
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'llama-status-writer', namespace: ns },
      rules: [{ apiGroups: ['farm.example.com'], resources: ['llamas/status'], verbs: ['get', 'update', 'patch'] }] }),
    stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'carol-writes-llama-status', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'llama-status-writer' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }] }),
  ].join('---\n') });
  const asCarol = (method: string, path: string, body?: unknown, contentType = 'application/json') =>
    viaApiserver(method, path, { body, headers: { 'Impersonate-User': 'carol', 'Impersonate-Group': 'system:authenticated', 'Content-Type': contentType } });
  const item = `${GV}/namespaces/${ns}/llamas/${name}`;
  const conditions = [{ type: 'Ready', status: 'True', reason: 'AtHome', message: '', lastTransitionTime: '2024-05-01T10:00:00Z' }];
  // kube-apiserver lets carol through for llamas/status; then our own SubjectAccessReview must ask for the subresource too.
  const put = await eventually('carol may update llamas/status', 15_000, async () => {
    const r = await asCarol('PUT', `${item}/status`, { ...created.json, spec: { weight: 1, height: 1 }, status: { observedGeneration: 1, conditions } });
    return r.status === 200 ? r : undefined;
  });
  assert.deepEqual(put.json.status, { observedGeneration: 1, conditions });
  assert.deepEqual(put.json.spec, created.json.spec);
  const patched = await asCarol('PATCH', `${item}/status`, { status: { observedGeneration: 2 } }, 'application/merge-patch+json');
  assert.equal(patched.status, 200, patched.body);
  assert.equal(patched.json.status.observedGeneration, 2);
  assert.equal((await asCarol('GET', `${item}/status`)).status, 200);

  const main = await asCarol('PUT', item, { ...patched.json, spec: { ...patched.json.spec, weight: 2 } });
  assert.equal(main.status, 403, main.body);
  assert.equal(main.json.message, `llamas.farm.example.com "${name}" is forbidden: User "carol" cannot update resource "llamas" in API group "farm.example.com" in the namespace "${ns}"`);
  assert.equal((await asCarol('GET', item)).status, 403);
  assert.equal((await viaApiserver('DELETE', item)).status, 200);
});
