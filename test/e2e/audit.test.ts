// Audit through the real aggregator: kube-apiserver 1.33 gives each request an Audit-ID, sends it
// with the request it proxies to us (kube-aggregator's proxy), and answers kubectl with it; our
// audit log records that same ID with the user kube-apiserver authenticated (front-proxy headers).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import { eventually } from './e2e.helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-audit-'));
const policy = join(tmp, 'policy.yaml');
const auditLog = join(tmp, 'farm-audit.log');
let cluster: FarmCluster;

before(async () => {
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: farm.example.com}]\n- level: None\n');
  cluster = await startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`), farmArgs: ['--audit-policy-file', policy, '--audit-log-path', auditLog] });
  const ns = await cluster.kubectl(['create', 'namespace', 'audit-e2e']);
  assert.equal(ns.code, 0, ns.stderr);
}, { timeout: 20 * 60_000 });

after(async () => {
  await cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

it("kube-apiserver's Audit-ID for a kubectl request is the auditID of our events", async () => {
  const r = await cluster.kubectl(['get', 'llamas', '-n', 'audit-e2e', '-v=8']);
  assert.equal(r.code, 0, r.stderr);
  // kubectl -v=8 prints response headers; the LIST of llamas is the one to our API group.
  const lines = r.stderr.split('\n');
  const listAt = lines.findIndex((l) => /verb="GET" url="https:\/\/[^"]+\/apis\/farm\.example\.com\/v1alpha\/namespaces\/audit-e2e\/llamas/.test(l));
  assert.ok(listAt >= 0, r.stderr);
  const id = lines.slice(listAt).join('\n').match(/Audit-Id: ([0-9a-f-]{36})/i)?.[1];
  assert.ok(id, `no Audit-Id after the LIST in:\n${r.stderr}`);
  const events = await eventually('our audit events with that ID', 10_000, async () => {
    const mine = readFileSync(auditLog, 'utf8').split('\n').filter((l) => l.includes(id)).map((l) => JSON.parse(l) as { auditID: string; stage: string; verb: string; user: { username?: string; groups?: string[] } });
    return mine.some((e) => e.stage === 'ResponseComplete') && mine;
  });
  assert.deepEqual(events.map((e) => [e.auditID, e.stage, e.verb]), [[id, 'RequestReceived', 'list'], [id, 'ResponseComplete', 'list']]);
  assert.equal(events[0]!.user.username, 'admin');
  assert.ok(events[0]!.user.groups?.includes('system:masters'), JSON.stringify(events[0]!.user));
});
