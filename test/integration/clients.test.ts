// Real third-party clients against the standalone server over HTTPS: the official Python
// `kubernetes` client (CustomObjectsApi, Watch, DynamicClient discovery) and k8s.io/client-go v0.33
// (dynamic client, watch, List() through watch-list with WatchListClient on, an informer), as the
// programs in test/clients/ drive them. One test per step of each program.
import { after, before } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import {
  CLIENTGO_STEPS, PYTHON_STEPS, clientGoExtras, clientStepTests, ensureClientGo, ensurePythonClient, pythonExtras,
  runClientGoCheck, runPythonCheck, type ClientRun,
} from '../clients/clients.js';

let s: TestServer;
let python: ClientRun;
let clientGo: ClientRun;

before(async () => {
  const [py, bin] = await Promise.all([ensurePythonClient(), ensureClientGo()]);
  s = await startTestServer();
  // Each program in its own namespace: neither sees the other's objects or events.
  [python, clientGo] = await Promise.all([
    runPythonCheck(py, s.kubeconfig, 'clients-python'),
    runClientGoCheck(bin, s.kubeconfig, 'clients-clientgo'),
  ]);
}, { timeout: 15 * 60_000 });

after(async () => { await s?.close(); });

clientStepTests('python', 'standalone', PYTHON_STEPS, () => python, pythonExtras);
clientStepTests('client-go', 'standalone', CLIENTGO_STEPS, () => clientGo, clientGoExtras);
