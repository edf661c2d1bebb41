// The etcd3 backend (kube's storagebackend factory for etcd3): one client shared by every resource's
// storage, keys under "<prefix>/<group>/<resource>/", the compactor, and kube's etcd health checks.
import type { BackendCheck, BackendLog, ResourceStorage, StorageBackend } from '../backend.js';
import { connectEtcd, type EtcdClient, type EtcdConnection } from './client.js';
import { Compactor } from './compactor.js';
import { Etcd3Storage } from './etcd3Storage.js';

export interface Etcd3BackendOptions {
  connection: EtcdConnection;
  /** e.g. "/registry" (no trailing slash). */
  prefix: string;
  /** 0 = never compact. */
  compactionIntervalMs: number;
  log: BackendLog;
  /** For tests: an existing client (closed by stop()). */
  client?: EtcdClient;
}

/** kube's --etcd-healthcheck-timeout and --etcd-readycheck-timeout. */
export const PROBE_TIMEOUT_MS = 2_000;

export function etcd3Backend(opts: Etcd3BackendOptions): StorageBackend {
  const client = opts.client ?? connectEtcd(opts.connection);
  const storages: { resource: string; storage: Etcd3Storage }[] = [];
  const compactor = new Compactor(client, opts.compactionIntervalMs, opts.log);
  const probe = rateLimitedProbe(client, opts.prefix);
  let stopped = false;

  const etcd: BackendCheck = { name: 'etcd', check: () => (stopped ? Promise.resolve('server is shutting down') : probe()) };
  // Ready with etcd, not with the watch caches (k8s.io/apiserver registers no storage-readiness hook
  // for an aggregated server): a cache being filled has its reads served from etcd or answered 429.
  const readiness: BackendCheck = { name: 'etcd-readiness', check: () => etcd.check() };

  return {
    name: 'etcd3',
    forResource(resource: string, historyLimit: number): ResourceStorage {
      const storage = new Etcd3Storage({ client, prefix: `${opts.prefix}/${resource}`, historyLimit, startTimeoutMs: Infinity });
      storages.push({ resource, storage });
      return storage;
    },
    start() {
      for (const { resource, storage } of storages) {
        // No deadline: the cache keeps trying until etcd answers; readiness says why meanwhile.
        void storage.start().then(
          () => opts.log.info({ resource, resourceVersion: storage.resourceVersion }, 'etcd: watch cache synced'),
          (e: unknown) => opts.log.warn({ err: e, resource }, 'etcd: watch cache stopped'),
        );
      }
      compactor.start();
    },
    async stop() {
      stopped = true;
      await compactor.stop();
      await Promise.all(storages.map(({ storage }) => storage.stop()));
      client.close();
    },
    livez: [etcd],
    readyz: [readiness],
  };
}

/**
 * kube's etcd3 health check: a linearizable read of "<prefix>/health" within 2 s (any answer, even an
 * empty one, means etcd has a quorum), at most one per second; checks in between get the last error.
 */
function rateLimitedProbe(client: EtcdClient, prefix: string): () => Promise<string | undefined> {
  let last: Promise<string | undefined> = Promise.resolve('etcd client connection not yet established');
  let lastAt = -Infinity;
  const everyMs = PROBE_TIMEOUT_MS / 2;
  return () => {
    const now = performance.now();
    if (now - lastAt < everyMs) return last;
    lastAt = now;
    last = probeOnce(client, `${prefix}/health`);
    return last;
  };
}

async function probeOnce(client: EtcdClient, key: string): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('context deadline exceeded')), PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([client.range({ key: Buffer.from(key) }), timeout]);
    return undefined;
  } catch (e) {
    return `error getting data from etcd: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}
