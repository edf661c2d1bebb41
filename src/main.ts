// CLI entry: config → certificates → server → listen; SIGTERM ends watches and exits 0.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { allowAll, tokenAuthenticator } from './auth/standalone.js';
import { ensureDevCerts, ensureToken } from './certs/devCerts.js';
import { writeKubeconfig } from './certs/kubeconfig.js';
import { watchServingCert } from './certs/reload.js';
import { ConfigError, loadConfig, usage, type Config } from './config.js';
import { ping } from './observability/health.js';
import { buildResources } from './resources/index.js';
import { buildServer } from './server.js';
import { VERSION } from './version.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`farm-apiserver: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  if (config.help) {
    process.stdout.write(usage());
    return;
  }
  if (!config.standalone) {
    process.stderr.write('farm-apiserver: cluster mode is not implemented yet; run with --standalone\n');
    process.exit(2);
  }
  const dev = config.tlsFilesExplicit ? undefined : await ensureDevCerts(config.certDir);
  const [cert, key] = await Promise.all([readFile(config.tlsCertFile, 'utf8'), readFile(config.tlsKeyFile, 'utf8')]);
  const token = await ensureToken(config.certDir);

  let shuttingDown = false;
  const resources = buildResources({ watchHistory: config.watchHistory, garbageCollection: false });
  const server = buildServer({
    tls: { key, cert },
    logLevel: config.logLevel,
    resources,
    standalone: true,
    authenticators: [tokenAuthenticator(token)],
    rejectAnonymous: true,
    authorizer: allowAll,
    health: {
      livez: [ping],
      readyz: [ping, { name: 'shutdown', check: () => (shuttingDown ? 'server is shutting down' : undefined) }],
    },
    watch: { queueCapacity: config.watchQueue, bookmarkIntervalMs: config.bookmarkIntervalSeconds * 1000 },
    version: { gitVersion: VERSION },
  });
  const { app } = server;
  const log = app.log;

  const stopReload = watchServingCert({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile },
    (pem) => { (app.server as unknown as import('node:tls').Server).setSecureContext(pem); log.info({ certFile: config.tlsCertFile }, 'serving certificate reloaded'); },
    (e) => log.warn({ err: e }, 'serving certificate not reloaded'));

  await app.listen({ port: config.port, host: config.bindAddress });
  const host = config.bindAddress.includes(':') ? `[${config.bindAddress}]` : config.bindAddress;
  const connectHost = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  const kubeconfig = join(config.certDir, 'kubeconfig');
  if (dev || !config.tlsFilesExplicit) {
    const caPem = await readFile(join(config.certDir, 'ca.crt'), 'utf8');
    await writeKubeconfig(kubeconfig, { server: `https://${connectHost}:${config.port}`, caPem, token, namespace: 'default' });
  }
  log.warn('standalone mode: every request with the generated token is allowed (no cluster authorization)');
  log.info({ kubeconfig, url: `https://${connectHost}:${config.port}` }, `ready: kubectl --kubeconfig ${kubeconfig} get llamas`);
  process.stdout.write(`\nfarm-apiserver is serving on https://${connectHost}:${config.port}\n  kubectl --kubeconfig ${kubeconfig} get llamas\n\n`);

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal }, 'shutting down');
    stopReload();
    const force = setTimeout(() => process.exit(0), config.shutdownTimeoutSeconds * 1000);
    force.unref();
    server.endWatches();
    await app.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((e: unknown) => {
  process.stderr.write(`farm-apiserver: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
