// Child process: the real farm server (buildServer, as test/helpers/testServer.ts builds it) plus
// static routes on the same fastify instance that answer with bytes captured from the real routes.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { allowAll, tokenAuthenticator } from '../../src/server/auth/standalone.js';
import { ping } from '../../src/server/observability/health.js';
import { buildResources } from '../../src/registry/farm/index.js';
import { buildServer } from '../../src/server/server.js';
import { createMetrics } from '../../src/server/observability/metrics.js';
import { cpuTotalMs, serveIpc } from '../lib/common.js';
import { seedLlamas } from '../lib/llama.js';

const { values } = parseArgs({ options: {
  'cert-dir': { type: 'string' },
  'log-level': { type: 'string', default: 'silent' },
  'watch-queue': { type: 'string', default: '1000' },
  // As main.ts always does: farm_* and kube's apiserver_* request metrics. Off by default, so rows stay
  // comparable with baselines whose bench server had none; the http suite measures its cost on its own.
  metrics: { type: 'boolean', default: false },
  // Counts requests reaching fastify per namespace (the loop-stall suite's HTTP/2 rows); off elsewhere, as a hook costs.
  'count-handled': { type: 'boolean', default: false },
} });
const dir = values['cert-dir']!;
const [key, cert, token] = await Promise.all(['tls.key', 'tls.crt', 'token'].map((f) => readFile(join(dir, f), 'utf8')));
const built = buildResources({ watchHistory: 10_000, garbageCollection: false });
const resources = built.definitions;
const llamas = resources[0];
const llamaStore = built.stores.get('llamas')!;
const server = buildServer({
  tls: { key, cert }, logger: pino({ level: values['log-level']! }), resources, standalone: true,
  auth: { authenticators: [tokenAuthenticator(token.trim())], rejectAnonymous: true, authorizer: allowAll },
  health: { livez: [ping], readyz: [ping] },
  watch: { queueCapacity: Number(values['watch-queue']), bookmarkIntervalMs: 60_000 },
  version: { gitVersion: 'v0.0.0-bench' },
  ...(values.metrics && { metrics: createMetrics() }),
});
const { app } = server;

const statics = new Map<string, { type: string; body: string }>();
for (const name of ['one', 'list', 'table']) {
  app.get(`/bench/static/${name}`, async (_req, reply) => {
    const s = statics.get(name);
    if (!s) return reply.code(404).send('not captured');
    return reply.code(200).type(s.type).send(s.body);
  });
}

// Requests that reached fastify (the handlers), per namespace path: how many cancelled HTTP/2 streams still ran.
const handled = new Map<string, number>();
if (values['count-handled']) app.addHook('onRequest', async (req) => {
  const ns = /\/namespaces\/([^/?]+)/.exec(req.url)?.[1];
  if (ns) handled.set(ns, (handled.get(ns) ?? 0) + 1);
});

// Event-loop delay since the last loopReset: how long the loop was blocked (bench/suites/loopStall.ts).
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();

await app.listen({ port: 0, host: '127.0.0.1' });
const port = (app.server.address() as { port: number }).port;

serveIpc({
  /** `createdYearsAgo` keeps Table ages (and so the response size) constant during a run, e.g. "9y". */
  async seed({ namespace, count, prefix, createdYearsAgo = 0 }: { namespace: string; count: number; prefix?: string; createdYearsAgo?: number }) {
    await seedLlamas(llamas, llamaStore, namespace, count, prefix, new Date(Date.now() - createdYearsAgo * 366 * 86_400_000));
    return llamaStore.resourceVersion;
  },
  /** Fetches `path` through the real routes and serves the same bytes at /bench/static/<name>. */
  async capture({ name, path, accept }: { name: string; path: string; accept?: string }) {
    const res = await app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${token.trim()}`, ...(accept ? { accept } : {}) } });
    if (res.statusCode !== 200) throw new Error(`capture ${path}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    statics.set(name, { type: String(res.headers['content-type']), body: res.body });
    return { bytes: Buffer.byteLength(res.body), contentType: res.headers['content-type'] };
  },
  cpu: () => cpuTotalMs(),
  loopReset: () => { loopDelay.reset(); return null; },
  /** Longest and 99th-percentile event-loop delay (ms) since loopReset; the timer resolution (5 ms) is included. */
  loopStats: () => ({ maxMs: loopDelay.max / 1e6, p99Ms: loopDelay.percentile(99) / 1e6, meanMs: loopDelay.mean / 1e6, samples: loopDelay.count }),
  handled: ({ namespace }: { namespace: string }) => handled.get(namespace) ?? 0,
  watchers: () => llamaStore.view.watcherCount,
  /** Resident set and heap after a full collection when the process runs with --expose-gc (bytes). */
  memory: () => {
    (globalThis as { gc?: () => void }).gc?.();
    const m = process.memoryUsage();
    return { rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
  },
  rv: () => llamaStore.resourceVersion,
}, { port });
// Exit through process.exit so that --cpu-prof (when profiling this process) writes its profile.
process.on('SIGTERM', () => process.exit(0));
