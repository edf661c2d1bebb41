// Real third-party clients through the real aggregator: a kube-apiserver 1.33 with our server
// registered as an APIService (test/cluster/farmCluster.ts), driven by the official Python
// `kubernetes` client and by k8s.io/client-go v0.33 (WatchListClient on) as cluster-admin, exactly
// as in test/integration/clients.test.ts. One test per step of each program.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { startFarmCluster, type FarmCluster } from '../cluster/farmCluster.js';
import {
  CLIENTGO_STEPS, PYTHON_STEPS, clientGoExtras, clientStepTests, ensureClientGo, ensurePythonClient, pythonExtras,
  runClientGoCheck, runPythonCheck, type ClientRun,
} from '../clients/clients.js';

const tmp = mkdtempSync(join(tmpdir(), 'farm-e2e-clients-'));
let cluster: FarmCluster;
let python: ClientRun;
let clientGo: ClientRun;

before(async () => {
  const [py, bin] = await Promise.all([ensurePythonClient(), ensureClientGo()]);
  cluster = await startFarmCluster({ dir: tmp, log: (l) => console.log(`[cluster] ${l}`) });
  // Namespaces are real here (our server's admission refuses writes into a missing one).
  for (const ns of ['clients-python', 'clients-clientgo']) {
    const r = await cluster.kubectl(['create', 'namespace', ns]);
    assert.equal(r.code, 0, r.stderr);
  }
  const admin = cluster.cp.adminKubeconfig;
  [python, clientGo] = await Promise.all([
    runPythonCheck(py, admin, 'clients-python'),
    runClientGoCheck(bin, admin, 'clients-clientgo'),
  ]);
}, { timeout: 20 * 60_000 });

after(async () => {
  await cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

clientStepTests('python', 'aggregator', PYTHON_STEPS, () => python, pythonExtras);
clientStepTests('client-go', 'aggregator', CLIENTGO_STEPS, () => clientGo, clientGoExtras);
