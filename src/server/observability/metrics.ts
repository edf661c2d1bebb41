// Prometheus metrics: calls to kube-apiserver by purpose, served requests by verb/resource/code,
// kube-apiserver's apiserver_* families (kubeMetrics.ts) and prom-client's default process/Node
// metrics, exposed at GET /metrics (a non-resource path: in cluster mode it is authorized by
// SubjectAccessReview like any other, as upstream servers do).
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import type { ResourceDefinition } from '../../registry/resource.js';
import type { ResourceStorage } from '../../storage/backend.js';
import { goFloat } from './kubeLabels.js';
import { createKubeMetrics, type KubeMetrics } from './kubeMetrics.js';
import { CounterSeries } from './metricSeries.js';

/** The text exposition format kube-apiserver and Prometheus speak. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export interface FarmMetrics {
  registry: Registry;
  /** Every request to kube-apiserver, by purpose (Upstream's onCall hook feeds it). */
  upstreamRequests: Counter<'purpose'>;
  /** Every request this server answered, by RequestInfo verb and resource and HTTP status code. */
  httpRequests: Counter<'verb' | 'resource' | 'code'>;
  /** kube-apiserver's families (apiserver_request_total ...), fed by kubeRequests.ts. */
  kube: KubeMetrics;
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
  return { registry, upstreamRequests, httpRequests, kube: createKubeMetrics(registry) };
}

/**
 * apiserver_storage_objects for each stored resource ("llamas.farm.example.com", as
 * DefaultQualifiedResource prints): the objects its cache holds, -1 while it cannot serve (upstream's
 * value when counting fails).
 */
export function observeStoredObjects(metrics: Pick<FarmMetrics, 'kube'>, defs: readonly ResourceDefinition[], stores: ReadonlyMap<string, ResourceStorage>): void {
  for (const def of defs) {
    const store = stores.get(def.plural);
    if (!store) continue;
    metrics.kube.storedObjects.add(def.group ? `${def.plural}.${def.group}` : def.plural, () => (store.unavailable() === undefined ? store.view.size : -1));
  }
}

export function registerMetricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get('/metrics', async (_req, reply) => {
    const body = goBucketBounds(await registry.metrics());
    return reply.type(METRICS_CONTENT_TYPE).header('X-Content-Type-Options', 'nosniff').send(body);
  });
}

/** client_golang writes `le` as Go formats floats (1e+06); so do we for the apiserver_* families. */
function goBucketBounds(text: string): string {
  return text.replace(/^(apiserver_\w+_bucket\{.*le=")([^"]+)(")/gm, (_m, head: string, le: string, tail: string) => `${head}${le === '+Inf' ? le : goFloat(Number(le))}${tail}`);
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
  const series = new Map<string, CounterSeries>();
  // A callback hook, not async: it runs on every request and a promise per hook is measurable.
  app.addHook('onRequest', (req, reply, done) => {
    reply.raw.once('close', () => {
      const info = req.info;
      const verb = info && knownVerbs.has(info.verb) ? info.verb : 'other';
      const resource = !info || !info.isResourceRequest ? '' : served.has(`${info.apiGroup}/${info.resource}`) ? info.resource : 'other';
      const code = String(reply.raw.statusCode);
      const key = `${verb} ${resource} ${code}`;
      let s = series.get(key);
      if (!s) series.set(key, s = new CounterSeries(counter, { verb, resource, code }));
      s.inc();
    });
    done();
  });
}
