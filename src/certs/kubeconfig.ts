// Writes a kubeconfig that lets kubectl (or tests) talk to this server directly.

import { randomBytes, X509Certificate } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { stringify } from 'yaml';

export interface KubeconfigOptions {
  /** e.g. https://127.0.0.1:8443 */
  server: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** Bearer token. */
  token: string;
  /** Default namespace of the context. */
  namespace?: string;
  /** Name of the context, cluster and user entries; default "farm-apiserver". */
  contextName?: string;
  /** Name to verify the serving certificate against when the server address is not one of its SANs. */
  tlsServerName?: string;
}

export const DEFAULT_CONTEXT_NAME = 'farm-apiserver';

/** Build the kubeconfig document (exported for callers that want the object, e.g. tests). */
export function buildKubeconfig(opts: KubeconfigOptions): Record<string, unknown> {
  const name = opts.contextName ?? DEFAULT_CONTEXT_NAME;
  let url: URL;
  try {
    url = new URL(opts.server);
  } catch {
    throw new Error(`kubeconfig: invalid server URL ${JSON.stringify(opts.server)}`);
  }
  if (url.protocol !== 'https:') throw new Error(`kubeconfig: server URL must be https, got ${JSON.stringify(opts.server)}`);
  try {
    new X509Certificate(opts.caPem);
  } catch {
    throw new Error('kubeconfig: caPem is not a PEM certificate');
  }
  if (opts.token === '' || /\s/.test(opts.token)) throw new Error('kubeconfig: token must be non-empty without whitespace');

  const context: Record<string, string> = { cluster: name, user: name };
  if (opts.namespace) context.namespace = opts.namespace;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server: opts.server,
          'certificate-authority-data': Buffer.from(opts.caPem, 'utf8').toString('base64'),
          ...(opts.tlsServerName ? { 'tls-server-name': opts.tlsServerName } : {}),
        },
      },
    ],
    users: [{ name, user: { token: opts.token } }],
    contexts: [{ name, context }],
    'current-context': name,
    preferences: {},
  };
}

/**
 * Write (or replace, atomically) a kubeconfig at `path` with mode 0600. A file that already says the
 * same is left alone, so a read-only directory (a mounted Secret) that holds it does not fail.
 */
export async function writeKubeconfig(path: string, opts: KubeconfigOptions): Promise<void> {
  const text = stringify(buildKubeconfig(opts), { lineWidth: 0 });
  if ((await readFile(path, 'utf8').catch(() => undefined)) === text) return;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  // A failure names the kubeconfig, not its temporary name (e.g. EROFS in a mounted Secret).
  const fh = await open(tmp, 'wx', 0o600).catch((e: unknown) => { throw Object.assign(e as NodeJS.ErrnoException, { path }); });
  try {
    await fh.writeFile(text);
    await fh.chmod(0o600);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await chmod(path, 0o600);
}
