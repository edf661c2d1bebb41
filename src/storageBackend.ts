// The storage backend the flags ask for: memory (the embedded default) or etcd3 with its TLS files.
import { readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import type { EtcdConfig } from './config.js';
import type { BackendLog, StorageBackend } from './storage/backend.js';
import { memoryBackend } from './storage/memory/memoryBackend.js';
import { step } from './startup.js';

export async function openStorageBackend(etcd: EtcdConfig | undefined, log: BackendLog): Promise<StorageBackend> {
  if (!etcd) return memoryBackend();
  const read = (flag: string, path: string) => step(`cannot read ${flag} ${path}`, () => readFile(path));
  const tls = etcd.caFile !== undefined || etcd.certFile !== undefined;
  const credentials = tls ? {
    // Without --etcd-cafile the system's roots verify etcd, as Go's crypto/tls does.
    rootCertificate: etcd.caFile ? await read('--etcd-cafile', etcd.caFile) : Buffer.from(rootCertificates.join('\n')),
    ...(etcd.certFile && etcd.keyFile && {
      certChain: await read('--etcd-certfile', etcd.certFile),
      privateKey: await read('--etcd-keyfile', etcd.keyFile),
    }),
  } : undefined;
  // Loaded only when asked for (the etcd client and the watch cache).
  const { etcd3Backend } = await import('./storage/etcd3/etcd3Backend.js');
  return etcd3Backend({ connection: { hosts: etcd.servers, credentials }, prefix: etcd.prefix, compactionIntervalMs: etcd.compactionIntervalMs, log });
}
