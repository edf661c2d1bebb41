// The two ends of the oracle: groups served through the same kube-apiserver with the same
// credentials (admin client certificate), over one keep-alive agent.
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { https, type HttpsResult } from '../e2e.helpers.js';
import type { ControlPlane } from '../../cluster/controlPlane.js';
import type { Target } from './steps.js';

export interface ApiClient {
  call(method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string> }): Promise<HttpsResult>;
  target(group: string, label: string): Target;
  close(): void;
}

export function apiClient(cp: ControlPlane): ApiClient {
  const admin = cp.clientCert('admin');
  const tls = { ca: readFileSync(cp.clusterCa, 'utf8'), cert: readFileSync(admin.cert, 'utf8'), key: readFileSync(admin.key, 'utf8') };
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const call: ApiClient['call'] = (method, path, opts = {}) =>
    https({ url: `${cp.apiserverUrl}${path}`, method, ...tls, agent, timeoutMs: 30_000, ...opts });
  return {
    call,
    target: (group, label) => ({ group, label, call: (method, path, o) => call(method, path, o) }),
    close: () => agent.destroy(),
  };
}
