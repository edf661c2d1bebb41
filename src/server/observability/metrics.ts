// Prometheus metrics: calls to kube-apiserver by purpose, served requests by verb/resource/code, and
// prom-client's default process/Node metrics, exposed at GET /metrics (a non-resource path: in
// cluster mode it is authorized by SubjectAccessReview like any other, as upstream servers do).
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';

/** The text exposition format kube-apiserver and Prometheus speak. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export interface FarmMetrics {
  registry: Registry;
  /** Every request to kube-apiserver, by purpose (Upstream's onCall hook feeds it). */
  upstreamRequests: Counter<'purpose'>;
  /** Every request this server answered, by RequestInfo verb and resource and HTTP status code. */
  httpRequests: Counter<'verb' | 'resource' | 'code'>;
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): FarmMetrics {
  const registry = new Registry();
  const upstreamRequests = new Counter({
    name: 'farm_upstream_requests_total',
    help: 'Requests made to kube-apiserver, by purpose (a list, a watch, a TokenReview, a SubjectAccessReview...).',
    labelNames: ['purpose'] as const,
    registers: [registry],
  });
  const httpRequests = new Counter({
    name: 'farm_http_requests_total',
    help: 'Requests served, by verb and resource (empty for non-resource paths) and HTTP status code.',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers: [registry],
  });
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return { registry, upstreamRequests, httpRequests };
}

export function registerMetricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get('/metrics', async (_req, reply) => {
    const body = await registry.metrics();
    return reply.type(METRICS_CONTENT_TYPE).header('X-Content-Type-Options', 'nosniff').send(body);
  });
}

const knownVerbs = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection', 'post', 'put', 'head', 'options']);

/**
 * Counts each request once when its response is over, including watches a client abandons (they
 * never 'finish', only 'close'). Register it before any hook that may answer early (authn/authz),
 * since a hook that replies skips the later ones; req.info is read at close. Labels stay bounded: an unknown verb is "other", a resource this
 * server does not serve is "other" (so made-up URLs cannot grow the label set).
 */
export function instrumentRequests(app: FastifyInstance, counter: FarmMetrics['httpRequests'], resources: readonly { group: string; plural: string }[]): void {
  const served = new Set(resources.map((r) => `${r.group}/${r.plural}`));
  app.addHook('onRequest', async (req, reply) => {
    reply.raw.once('close', () => {
      const info = req.info;
      const verb = info && knownVerbs.has(info.verb) ? info.verb : 'other';
      const resource = !info || !info.isResourceRequest ? '' : served.has(`${info.apiGroup}/${info.resource}`) ? info.resource : 'other';
      counter.inc({ verb, resource, code: String(reply.raw.statusCode) });
    });
  });
}
