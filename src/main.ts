// CLI entry: config → certificates → server → listen; SIGTERM ends watches and exits 0.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { Server as TlsServer } from 'node:tls';
import { pino } from 'pino';
import { allowAll, tokenAuthenticator } from './server/auth/standalone.js';
import { ensureDevCerts, ensureToken } from './certs/devCerts.js';
import { writeKubeconfig } from './certs/kubeconfig.js';
import { watchServingCert } from './certs/reload.js';
import { checkServingPair } from './certs/servingPair.js';
import { ServingTls } from './certs/servingTls.js';
import { ConfigError, loadConfig, usage, type Config } from './config.js';
import { ping, type HealthCheck } from './server/observability/health.js';
import { createMetrics, observeStoredObjects } from './server/observability/metrics.js';
import { buildResources } from './registry/farm/index.js';
import { buildServer } from './server/server.js';
import { openAuditing } from './server/audit/setup.js';
import { startTracing } from './server/observability/tracing.js';
import { InFlightLimiter } from './server/filters/inFlightLimiter.js';
import { Upstream } from './upstream/client.js';
import type { Reflector } from './upstream/reflector.js';
import { delegation } from './server/delegation.js';
import { reasonOf, startupFailure, step } from './startup.js';
import { openStorageBackend } from './storageBackend.js';
import { VERSION } from './version.js';
import { isWorker, runPrimary, workerId } from './workers.js';

/** The longest the watch caches wait for the start's own work before filling. */
const FILL_AFTER_MS = 1_000;

/** --log-level debug: start-up failures print their stack too. */
let debug = false;

function loadConfigOrExit(): Config {
  try {
    return loadConfig(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`farm-apiserver: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}

const synced = (name: string, r: Reflector): HealthCheck => ({
  name, check: () => (r.synced ? undefined : `not synced with kube-apiserver${r.lastError ? `: ${r.lastError}` : ''}`),
});

/** Resolves once every check passes (polled; storage checks are rate-limited anyway). */
async function untilHealthy(checks: HealthCheck[]): Promise<void> {
  for (;;) {
    const results = await Promise.all(checks.map((c) => c.check()));
    if (results.every((r) => r === undefined)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  // Until the server listens, a signal just ends the process cleanly.
  let onSignal: (signal: string) => void = () => process.exit(0);
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const config = loadConfigOrExit();
  if (config.help) {
    process.stdout.write(usage());
    return;
  }
  debug = ['debug', 'trace'].includes(config.logLevel);
  // Every step until the server listens fails as one line naming what and why (src/startup.ts).
  const certDir = `--cert-dir ${config.certDir}`;
  const dev = config.tlsFilesExplicit ? undefined : await step(`cannot prepare the certificates in ${certDir}`, () => ensureDevCerts(config.certDir));
  if (config.workers > 1 && !isWorker()) {
    // The primary makes what the workers share (certificates above, the token) once, then only supervises.
    if (config.standalone) await step(`cannot prepare the access token in ${certDir}`, () => ensureToken(config.certDir));
    onSignal = () => {};
    runPrimary(config.workers, pino({ level: config.logLevel }));
    return;
  }
  const cert = await step(`cannot read the serving certificate ${config.tlsCertFile}`, () => readFile(config.tlsCertFile, 'utf8'));
  const key = await step(`cannot read the serving key ${config.tlsKeyFile}`, () => readFile(config.tlsKeyFile, 'utf8'));
  // An empty or garbled PEM, or a key of another certificate, fails here, not at the first handshake.
  await step('cannot use the serving certificate and key', () => checkServingPair({ cert, key }, { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile }));
  const token = config.standalone ? await step(`cannot prepare the access token in ${certDir}`, () => ensureToken(config.certDir)) : '';
  const metrics = createMetrics();
  const upstream = config.standalone && !config.kubeconfig ? undefined
    : await step(config.kubeconfig ? `cannot load --kubeconfig ${config.kubeconfig}` : 'cannot load the in-cluster configuration',
      () => Upstream.load({ kubeconfig: config.kubeconfig, inCluster: config.inCluster, onCall: (purpose) => metrics.upstreamRequests.inc({ purpose }) }));

  let shuttingDown = false;
  const log = pino({ level: config.logLevel });
  let tls: ServingTls | undefined;
  const cluster = !config.standalone && upstream
    ? delegation(upstream, log, (t) => tls?.setClientCAs([t.clientCAPem, t.requestHeader.caPem]))
    : undefined;
  // A bad policy or an unwritable log stops start-up before anything is served (options/audit.go ApplyTo).
  const audit = await step('cannot set up auditing', () => openAuditing({
    policyFile: config.auditPolicyFile, logPath: config.auditLogPath,
    logMaxAgeDays: config.auditLogMaxAge, logMaxBackups: config.auditLogMaxBackup, logMaxSizeMB: config.auditLogMaxSize,
  }, log));
  // A missing, undecodable or invalid tracing configuration stops start-up (options/tracing.go ApplyTo).
  const tracingConfigFile = config.tracingConfigFile;
  const tracing = tracingConfigFile ? await step(`cannot set up tracing from --tracing-config-file ${tracingConfigFile}`, () => startTracing(tracingConfigFile, log)) : undefined;
  const storage = await openStorageBackend(config.etcd, log);
  log.info(config.etcd ? { servers: config.etcd.servers, prefix: config.etcd.prefix } : {}, `storage: ${storage.name}`);
  const resources = buildResources({ watchHistory: config.watchHistory, garbageCollection: !config.standalone, upstream, log, storage });
  for (const why of resources.omitted) log.info(`not served: ${why}`);
  observeStoredObjects(metrics, resources.definitions, resources.stores);
  const reflectors = [...resources.reflectors, ...(cluster?.reflectors ?? [])];
  // kube-apiserver's order: etcd in every endpoint, etcd-readiness in /readyz only.
  const livez: HealthCheck[] = [ping, ...storage.livez];
  const readyz: HealthCheck[] = [
    ...livez,
    ...storage.readyz,
    { name: 'shutdown', check: () => (shuttingDown ? 'server is shutting down' : undefined) },
    ...reflectors.map(({ name, reflector }) => synced(name, reflector)),
  ];
  const server = buildServer({
    tls: { key, cert },
    logger: log,
    resources: resources.definitions,
    standalone: config.standalone,
    auth: cluster?.auth ?? { authenticators: [tokenAuthenticator(token)], authorizer: allowAll, rejectAnonymous: true },
    health: { livez, readyz },
    watch: { queueCapacity: config.watchQueue, bookmarkIntervalMs: config.bookmarkIntervalSeconds * 1000 },
    admitCreate: cluster?.admitCreate,
    version: { gitVersion: VERSION },
    metrics,
    audit,
    inFlight: new InFlightLimiter({ readOnly: config.maxRequestsInflight, mutating: config.maxMutatingRequestsInflight }),
    tracing,
  });
  const { app } = server;
  tls = new ServingTls(app.server as unknown as TlsServer, { cert, key });
  for (const { reflector } of reflectors) reflector.start();
  // Serve at once (liveness must answer); /readyz stays failing until the trust ConfigMap is read.
  if (cluster) void cluster.trustSynced().then(() => log.info({ server: upstream?.server }, 'cluster mode: read kube-system/extension-apiserver-authentication'));

  const stopReload = watchServingCert({ certFile: config.tlsCertFile, keyFile: config.tlsKeyFile },
    (pem) => { tls?.setPair(pem); log.info({ certFile: config.tlsCertFile }, 'serving certificate reloaded'); },
    (e) => log.warn({ err: e }, 'serving certificate not reloaded'),
    { initial: { cert, key } });

  const host = config.bindAddress.includes(':') ? `[${config.bindAddress}]` : config.bindAddress;
  // A worker takes connections only once its storage serves: the primary hands connections to any
  // listening worker, and the pod is already ready through the others (a lone process listens at once
  // so /livez answers while /readyz says why it waits).
  if (isWorker()) await untilHealthy(storage.readyz);
  await step(`cannot listen on ${host}:${config.port}`, () => app.listen({ port: config.port, host: config.bindAddress }));
  // The watch caches fill after the start's own work (listening, and in cluster mode the trust
  // ConfigMap and the namespaces), or 1 s at most: a fill lists every stored object from etcd, which on
  // a shared core held the first /readyz 200 back by ~30-100 ms. Reads go to etcd until then. Not after
  // the Pods: FarmPods built before the llamas are filled say no llama until the fill ends.
  void Promise.race([Promise.all((cluster?.reflectors ?? []).map(({ reflector }) => reflector.waitForSync())), sleep(FILL_AFTER_MS)])
    .then(() => { if (!shuttingDown) storage.start(); });
  const connectHost = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  const url = `https://${connectHost}:${config.port}`;
  if (config.standalone) {
    const kubeconfig = join(config.certDir, 'kubeconfig');
    // The generated certificate names only loopback: another bind address is verified as localhost.
    const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(connectHost);
    const writeOwnKubeconfig = async () => writeKubeconfig(kubeconfig, {
      server: url, caPem: dev ? await readFile(dev.caFile, 'utf8') : cert, token, namespace: 'default',
      ...(loopback || !dev ? {} : { tlsServerName: 'localhost' }),
    });
    // Serving matters more than the convenience file: a read-only cert dir (a mounted Secret) that
    // holds it already says the same and is left alone; one that cannot take it only gets a warning.
    await writeOwnKubeconfig().catch((e: unknown) =>
      log.warn(`cannot write ${kubeconfig}: ${reasonOf(e, kubeconfig)}; kubectl needs a kubeconfig with this server's CA and token`));
    log.warn('standalone mode: every request with the generated token is allowed (no cluster authorization)');
    log.info({ kubeconfig, url }, 'ready');
    // With --workers, one banner for the server, not one per process.
    if (workerId() <= 1) process.stdout.write(`\nfarm-apiserver (standalone) is serving on ${url}\n  kubectl --kubeconfig ${kubeconfig} get llamas\n\n`);
  } else {
    log.info({ url }, 'ready (cluster mode)');
  }

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal }, 'shutting down');
    stopReload();
    for (const { reflector } of reflectors) reflector.stop();
    const force = setTimeout(() => process.exit(0), config.shutdownTimeoutSeconds * 1000);
    force.unref();
    server.endWatches();
    await app.close();
    audit?.sink.close();
    await tracing?.shutdown();
    await storage.stop();
    process.exit(0);
  };
  onSignal = (signal) => void shutdown(signal);
}

main().catch((e: unknown) => {
  process.stderr.write(startupFailure(e, debug));
  process.exit(1);
});
