// buildServer(): the fastify instance with every route; main.ts and the tests both use it.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { authentication, type AuthChain } from './auth/plugin.js';
import { registerDiscoveryRoutes } from '../endpoints/discovery/routes.js';
import { installBodyParsers, MAX_BODY_BYTES } from '../endpoints/bodies.js';
import { clientErrorHandler, expectationFailed, installErrorHandling, sendError } from '../endpoints/http.js';
import { registerOpenApiRoutes } from '../endpoints/openapi/routes.js';
import { closeConnectionAfter } from '../endpoints/protocol.js';
import { hasStatusSubresource, type ResourceDefinition } from '../registry/resource.js';
import { ResourceIndex } from '../registry/resourceIndex.js';
import { registerResourceRoutes, type RestOptions } from '../endpoints/installer.js';
import { errors } from '../apimachinery/status.js';
import type { WatchHandle, WatchSettings } from '../endpoints/handlers/watch.js';
import { YamlCodec } from '../apimachinery/yamlCodec.js';
import { registerHealthRoutes, type HealthChecks } from './observability/health.js';
import { instrumentRequests, registerMetricsRoute, type FarmMetrics } from './observability/metrics.js';
import { instrumentKubeRequests } from './observability/kubeRequests.js';
import { createServingServer, DEFAULT_HTTP_LIMITS, type HttpLimits, type ServingServer } from './serving.js';
import { auditedAuthChain, auditIdForLogs, installAudit } from './audit/install.js';
import type { Auditing } from './audit/setup.js';
import { InFlightLimiter } from './filters/inFlightLimiter.js';
import { maxInFlightAdmission } from './filters/maxInFlight.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Tracing } from './observability/tracing.js';

export { DEFAULT_HTTP_LIMITS, type HttpLimits } from './serving.js';

export interface ServerOptions {
  tls: { key: string; cert: string; ca?: string };
  /** One pino logger for the whole process (start-up components log before the server exists). */
  logger: FastifyBaseLogger;
  resources: ResourceDefinition[];
  standalone: boolean;
  /** Read per request, so start-up can complete it once the cluster's trust is known. */
  auth: AuthChain;
  health: HealthChecks;
  watch: { queueCapacity: number; bookmarkIntervalMs: number; endDrainMs?: number };
  admitCreate?: RestOptions['admitCreate'];
  version: { gitVersion: string };
  /** Serves GET /metrics from `registry` and counts every request in `httpRequests` and kube's apiserver_* families. */
  metrics?: Pick<FarmMetrics, 'registry' | 'httpRequests' | 'kube'>;
  http?: Partial<HttpLimits>;
  /** Audit policy and log (--audit-policy-file, --audit-log-path); the Audit-Id header is always served. */
  audit?: Auditing;
  /** --max-requests-inflight / --max-mutating-requests-inflight; kube's 400/200 when not given. */
  inFlight?: InFlightLimiter;
  /** --tracing-config-file: every request runs inside its server span; absent, requests are not touched. */
  tracing?: Tracing;
}

export type { AuthChain } from './auth/plugin.js';

export interface FarmServer { app: FastifyInstance; watchers: Set<WatchHandle>; endWatches(): void; inFlight: InFlightLimiter }

/** How long a shutdown waits for ended watches to finish their responses. */
const WATCH_END_WAIT_MS = 1000;

export function buildServer(opts: ServerOptions): FarmServer {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...opts.http };
  let serving: ServingServer | undefined;
  const tracing = opts.tracing;
  const app = Fastify({
    loggerInstance: opts.logger,
    routerOptions: { maxParamLength: 1024 },
    // Router-level rejections (bad URL encoding, overlong segments) are Status errors too.
    frameworkErrors: (err, _req, reply) => sendError(reply, errors.badRequest(err.message)),
    // Per-request lines cost ~28% of GET throughput; like kube-apiserver's -v=3, only when debugging.
    // Every request's log lines carry its Audit-ID (audit_init.go) as the request id: fastify binds it
    // to the request's child logger, so a custom child-logger factory (validated per request) is not needed.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(opts.logger.level), requestIdLogLabel: 'auditID' }),
    genReqId: auditIdForLogs,
    // HTTP/2 and HTTP/1.1 on one port. Fastify's own http2 mode would add a session timeout that
    // cuts quiet watches; requests of either protocol share the surface fastify uses.
    serverFactory: (handler) => {
      serving = createServingServer(opts.tls, limits, tracing ? tracing.wrap(handler) : handler);
      return serving.server as unknown as Server;
    },
    bodyLimit: MAX_BODY_BYTES,
    clientErrorHandler,
    // Idle keep-alive sockets close at once; in-flight requests get the shutdown grace period.
    forceCloseConnections: 'idle',
    // Requests arriving while closing get our 503 Status (fastify's own would not be one).
    return503OnClosing: false,
  });
  let closing = false;
  app.addHook('preClose', async () => { closing = true; });
  app.server.on('checkExpectation', expectationFailed);
  const resources = new ResourceIndex(opts.resources);
  installErrorHandling(app, (info) => {
    const def = resources.lookup(info.apiGroup, info.apiVersion, info.resource);
    return def && { subresources: hasStatusSubresource(def) ? ['status'] : [] };
  });
  // Two workers: a hostile request body occupying one never delays YAML responses.
  const yamlIn = new YamlCodec({ maxJsonBytes: 2 * MAX_BODY_BYTES, timeoutMs: 10_000 });
  const yaml = new YamlCodec({ maxJsonBytes: 2 * MAX_BODY_BYTES, timeoutMs: 10_000 });
  app.addHook('onClose', async () => { yamlIn.close(); yaml.close(); });
  installBodyParsers(app, { yaml: yamlIn, timeoutMs: limits.bodyTimeoutMs });
  // First of the onRequest hooks: the Audit-Id header and the request's audit (WithAuditInit is outermost).
  installAudit(app, opts.audit);
  // Before the authn/authz hook: a hook that answers (401/403) skips the hooks after it.
  if (opts.metrics) instrumentRequests(app, opts.metrics.httpRequests, opts.resources);
  const kubeMetrics = opts.metrics?.kube;
  const watchObserver = kubeMetrics && instrumentKubeRequests(app, kubeMetrics, opts.resources);
  if (kubeMetrics) app.addHook('onClose', async () => kubeMetrics.stop());

  // Requests arriving while closing get our 503 before any other work.
  app.addHook('onRequest', async (_req, reply) => {
    if (!closing) return;
    closeConnectionAfter(reply);
    return sendError(reply, errors.serviceUnavailable('the server is shutting down'));
  });
  const inFlight = opts.inFlight ?? new InFlightLimiter({ readOnly: 400, mutating: 200 });
  app.register(authentication, {
    auth: opts.audit ? auditedAuthChain(opts.auth) : opts.auth,
    resources,
    // WithTracing sits right after WithAuthentication: the caller's groups decide the span's parent.
    afterAuthentication: tracing && ((req, reply, next) => tracing.enter(req.raw as IncomingMessage, reply.raw as ServerResponse, req.info, req.user.groups, next)),
    admit: maxInFlightAdmission(inFlight),
  });
  kubeMetrics?.inflight.feed(() => inFlight.takeWatermarks());

  const watchers = new Set<WatchHandle>();
  const watch: WatchSettings = { ...opts.watch, registry: watchers, observer: watchObserver };
  registerHealthRoutes(app, opts.health);
  if (opts.metrics) registerMetricsRoute(app, opts.metrics.registry);
  registerDiscoveryRoutes(app, opts.resources, { standalone: opts.standalone, version: opts.version });
  registerOpenApiRoutes(app, opts.resources);
  // Each group-version is its own encapsulated plugin, as each is its own APIGroupInfo upstream.
  for (const defs of resources.groupVersions()) {
    app.register(async (gv) => { for (const def of defs) registerResourceRoutes(gv, def, { watch, yaml, admitCreate: opts.admitCreate }); });
  }

  const endWatches = () => { for (const w of [...watchers]) w.close(); };
  app.addHook('preClose', async () => {
    endWatches();
    // fastify then closes idle connections: an HTTP/1.1 watch whose response has not ended by then keeps its
    // connection (kept alive) until the idle timeout. A stream stuck on a client that stopped reading is cut after 0.5 s.
    for (let i = 0; watchers.size > 0 && i < WATCH_END_WAIT_MS / 5; i++) await new Promise((r) => setTimeout(r, 5));
    serving?.closeSessions();
  });
  return { app, watchers, endWatches, inFlight };
}
