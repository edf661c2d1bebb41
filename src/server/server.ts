// buildServer(): the fastify instance with every route; main.ts and the tests both use it.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Authenticator, Authorizer, UserInfo } from './auth/types.js';
import { anonymous } from './auth/types.js';
import { impersonatedUser } from './auth/impersonation.js';
import { MAX_BODY_BYTES } from '../config.js';
import { registerDiscoveryRoutes } from '../endpoints/discovery/routes.js';
import { installBodyParsers } from '../endpoints/bodies.js';
import { clientErrorHandler, expectationFailed, installErrorHandling, sendError } from '../endpoints/http.js';
import { registerOpenApiRoutes } from '../endpoints/openapi/routes.js';
import { closeConnectionAfter } from '../endpoints/protocol.js';
import { requestInfo, type RequestInfo } from '../endpoints/requestInfo.js';
import type { ResourceDefinition } from '../registry/resource.js';
import { registerResourceRoutes, type RestOptions } from '../endpoints/installer.js';
import { ApiError, errors } from '../apimachinery/status.js';
import type { WatchSettings } from '../endpoints/handlers/watch.js';
import { YamlCodec } from '../apimachinery/yamlCodec.js';
import { registerHealthRoutes, type HealthChecks } from './observability/health.js';
import { instrumentRequests, registerMetricsRoute, type FarmMetrics } from './observability/metrics.js';
import { createServingServer, DEFAULT_HTTP_LIMITS, type HttpLimits, type ServingServer } from './serving.js';
import type { Watcher } from '../storage/interfaces.js';
import type { Server } from 'node:http';

export const ALWAYS_ALLOWED_PATHS = ['/healthz', '/readyz', '/livez'];

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
  watch: { queueCapacity: number; bookmarkIntervalMs: number };
  admitCreate?: RestOptions['admitCreate'];
  version: { gitVersion: string };
  /** Serves GET /metrics from `registry` and counts every request in `httpRequests`. */
  metrics?: Pick<FarmMetrics, 'registry' | 'httpRequests'>;
  http?: Partial<HttpLimits>;
}

export interface AuthChain {
  /** Tried in order; the first that recognizes the request's credentials decides. */
  authenticators: Authenticator[];
  /** Standalone answers 401 to anonymous callers; a cluster server authorizes them like anyone. */
  rejectAnonymous: boolean;
  authorizer: Authorizer;
}

declare module 'fastify' {
  interface FastifyRequest { user?: UserInfo; info?: RequestInfo }
}

export interface FarmServer { app: FastifyInstance; watchers: Set<Watcher>; endWatches(): void }

export function buildServer(opts: ServerOptions): FarmServer {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...opts.http };
  let serving: ServingServer | undefined;
  const app = Fastify({
    loggerInstance: opts.logger,
    routerOptions: { maxParamLength: 1024 },
    // Router-level rejections (bad URL encoding, overlong segments) are Status errors too.
    frameworkErrors: (err, _req, reply) => sendError(reply, errors.badRequest(err.message)),
    // Per-request lines cost ~28% of GET throughput; like kube-apiserver's -v=3, only when debugging.
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(opts.logger.level) }),
    // HTTP/2 and HTTP/1.1 on one port. Fastify's own http2 mode would add a session timeout that
    // cuts quiet watches; requests of either protocol share the surface fastify uses.
    serverFactory: (handler) => {
      serving = createServingServer(opts.tls, limits, handler);
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
  installErrorHandling(app, (info) => opts.resources.some((d) => d.group === info.apiGroup && d.version === info.apiVersion && d.plural === info.resource));
  // Two workers: a hostile request body occupying one never delays YAML responses.
  const yamlIn = new YamlCodec({ maxJsonBytes: 2 * MAX_BODY_BYTES, timeoutMs: 10_000 });
  const yaml = new YamlCodec({ maxJsonBytes: 2 * MAX_BODY_BYTES, timeoutMs: 10_000 });
  app.addHook('onClose', async () => { yamlIn.close(); yaml.close(); });
  installBodyParsers(app, { yaml: yamlIn, timeoutMs: limits.bodyTimeoutMs });
  // Before the authn/authz hook: a hook that answers (401/403) skips the hooks after it.
  if (opts.metrics) instrumentRequests(app, opts.metrics.httpRequests, opts.resources);

  app.addHook('onRequest', async (req, reply) => {
    try {
      if (closing) {
        closeConnectionAfter(reply);
        throw errors.serviceUnavailable('the server is shutting down');
      }
      req.info = requestInfo(req.method, req.url);
      const { auth } = opts;
      req.user = await authenticate(req, auth.authenticators);
      req.log.debug({ user: req.user, httpVersion: req.raw.httpVersion }, 'authenticated');
      const path = req.info.path;
      if (ALWAYS_ALLOWED_PATHS.some((p) => path === p || path.startsWith(`${p}/`))) return;
      if (req.user === anonymous && auth.rejectAnonymous) throw errors.unauthorized();
      req.user = await impersonatedUser(req, req.user, auth.authorizer, forbidden);
      const decision = await auth.authorizer.authorize(req.user, req.info, req);
      if (!decision.allowed) throw forbidden(req.user, req.info, decision.reason);
      const info = req.info;
      const def = info.isResourceRequest ? opts.resources.find((d) => d.group === info.apiGroup && d.version === info.apiVersion && d.plural === info.resource) : undefined;
      for (const extra of def?.alsoRequires?.(info) ?? []) {
        const d = await auth.authorizer.authorize(req.user, extra.info, req);
        if (!d.allowed) throw forbidden(req.user, extra.info, d.reason ? `${d.reason}; ${extra.why}` : extra.why);
      }
    } catch (e) {
      return sendError(reply, e instanceof ApiError ? e : errors.internal(String(e)));
    }
  });

  const watchers = new Set<Watcher>();
  const watch: WatchSettings = { ...opts.watch, registry: watchers };
  registerHealthRoutes(app, opts.health);
  if (opts.metrics) registerMetricsRoute(app, opts.metrics.registry);
  registerDiscoveryRoutes(app, opts.resources, { standalone: opts.standalone, version: opts.version });
  registerOpenApiRoutes(app, opts.resources);
  for (const def of opts.resources) registerResourceRoutes(app, def, { watch, yaml, admitCreate: opts.admitCreate });

  const endWatches = () => { for (const w of [...watchers]) w.close(); };
  app.addHook('preClose', async () => { endWatches(); serving?.closeSessions(); });
  return { app, watchers, endWatches };
}

async function authenticate(req: FastifyRequest, authenticators: Authenticator[]): Promise<UserInfo> {
  for (const a of authenticators) {
    const user = await a.authenticate(req);
    if (user) return user.groups.includes('system:authenticated') ? user : { ...user, groups: [...user.groups, 'system:authenticated'] };
  }
  return anonymous;
}

/** The Forbidden Status as k8s.io/apiserver's responsewriters.Forbidden words it. */
export function forbidden(user: UserInfo, info: RequestInfo, reason?: string): ApiError {
  const suffix = reason ? `: ${reason}` : '';
  if (!info.isResourceRequest) {
    return errors.forbidden(`forbidden: User "${user.username}" cannot ${info.verb} path "${info.path}"${suffix}`);
  }
  const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  const qualified = info.apiGroup ? `${info.resource}.${info.apiGroup}` : info.resource;
  const scope = info.namespace ? ` in the namespace "${info.namespace}"` : info.resource === 'namespaces' ? '' : ' at the cluster scope';
  const group = `in API group "${info.apiGroup}"`;
  const subject = info.name ? `${qualified} "${info.name}"` : qualified;
  return errors.forbidden(`${subject} is forbidden: User "${user.username}" cannot ${info.verb} resource "${resource}" ${group}${scope}${suffix}`,
    { name: info.name || undefined, group: info.apiGroup, kind: info.resource });
}
