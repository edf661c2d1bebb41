// Feeds kube-apiserver's request metrics (kubeMetrics.ts) from fastify's request lifecycle, the way
// k8s.io/apiserver v0.33 does:
// - MonitorRequest runs only for requests that reach an API route (installer.go wraps each route in
//   InstrumentRouteFunc), so what authentication or authorization refuses, and paths or methods no
//   route serves, are not counted: made-up URLs cannot grow the label set. Besides those, only the
//   root health endpoints (healthz.go, component "") and aggregated discovery (aggregated/handler.go)
//   are instrumented. /metrics, /version, legacy discovery and OpenAPI are not.
// - Labels come from the route: its action verb and scope (installer.go), not from the request path.
// - Durations run from the request's arrival (WithRequestReceivedTimestamp) until the handler is done;
//   a watch is observed when it ends. The SLI histogram subtracts webhook and APF queue time, which
//   this server has none of, so it observes the same duration.
// - Response sizes are recorded for the GET and LIST routes only (a ?watch=true on the LIST route too).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { WatchObserver } from '../../endpoints/handlers/watch.js';
import { requestInfo, type RequestInfo } from '../../endpoints/requestInfo.js';
import { hasStatusSubresource, STATUS_VERBS, type ResourceDefinition } from '../../registry/resource.js';
import { ResourceIndex } from '../../registry/resourceIndex.js';
import { restVerbs, type Verb } from '../../registry/rest.js';
import { cleanDryRun, cleanScope, reportedVerb, type Scope, type VerbInput } from './kubeLabels.js';
import type { KubeMetrics, SliLabels } from './kubeMetrics.js';
import { CounterSeries, HistogramSeries } from './metricSeries.js';

export const APISERVER_COMPONENT = 'apiserver';

/** An installer.go route action: what MonitorRequest is given for this route. */
interface Action { verb: string; scope: Scope; group: string; version: string; resource: string; subresource: string; component: string }

/** The series one kind of request feeds, resolved once. */
interface RequestSeries { requests: CounterSeries; duration: HistogramSeries; sli: HistogramSeries; sizes?: HistogramSeries }

interface Tracked {
  started: bigint;
  bytes: number;
  /** The request passed authentication and authorization (reached its route, as InstrumentRouteFunc needs). */
  routed: boolean;
}

const HEALTH_PATHS = new Set(['/healthz', '/livez', '/readyz']);
const DISCOVERY_PATHS: Record<string, string> = { '/apis': 'apis', '/api': 'api' };

/**
 * Installs the hooks; returns the observer the watch handler reports its streams to. Register it
 * before any hook that may answer early (authentication, authorization, shutdown), so every request
 * is timed from its arrival.
 */
export function instrumentKubeRequests(app: FastifyInstance, metrics: KubeMetrics, defs: readonly ResourceDefinition[]): WatchObserver {
  const index = new ResourceIndex([...defs]);
  const tracked = new WeakMap<object, Tracked>();
  // By every label value: as bounded as the label sets themselves (routes, verbs, codes).
  const series = new Map<string, RequestSeries>();

  // Callback hooks, not async: they run on every request and a promise per hook is measurable.
  app.addHook('onRequest', (req, reply, done) => {
    const t: Tracked = { started: process.hrtime.bigint(), bytes: 0, routed: false };
    tracked.set(req.raw, t);
    countBodyBytes(reply.raw, t);
    reply.raw.once('close', () => { if (t.routed) monitor(req, reply, t); });
    done();
  });
  // Runs only when no earlier hook answered (401/403/503 end the request in onRequest).
  app.addHook('preParsing', (req, _reply, payload, done) => {
    const t = tracked.get(req.raw);
    if (t) t.routed = true;
    done(null, payload);
  });

  function monitor(req: FastifyRequest, reply: FastifyReply, t: Tracked): void {
    // The authentication hook parsed it already for every routed request.
    const info = (req.info as RequestInfo | null) ?? requestInfo(req.method, req.url);
    const action = routeAction(req, reply, index, info);
    if (!action) return;
    const input = verbInput(req, info);
    const verb = reportedVerb(action.scope, action.verb, input);
    const seconds = Number(process.hrtime.bigint() - t.started) / 1e9;
    const dryRun = cleanDryRun(input.query);
    const code = reply.raw.statusCode;
    // The route's own verb too: a ?watch=true LIST and a /watch/ WATCHLIST both report WATCH, only the first has sizes.
    const key = `${action.verb} ${verb} ${dryRun} ${action.group} ${action.version} ${action.resource} ${action.subresource} ${action.scope} ${action.component} ${code}`;
    let s = series.get(key);
    if (!s) {
      const common: SliLabels = { verb, group: action.group, version: action.version, resource: action.resource, subresource: action.subresource, scope: action.scope, component: action.component };
      s = {
        requests: new CounterSeries(metrics.requests, { ...common, dry_run: dryRun, code: String(code) }),
        duration: new HistogramSeries(metrics.duration, { ...common, dry_run: dryRun }),
        sli: new HistogramSeries(metrics.sliDuration, common),
        sizes: action.verb === 'GET' || action.verb === 'LIST' ? new HistogramSeries(metrics.responseSizes, common) : undefined,
      };
      series.set(key, s);
    }
    s.requests.inc();
    s.duration.observe(seconds);
    s.sli.observe(seconds);
    s.sizes?.observe(t.bytes);
  }

  // Every event of every watcher is counted: its series is resolved once per kind, not hashed per event.
  const watchSeries = new Map<string, { count: CounterSeries; sizes: HistogramSeries }>();
  const eventSeries = (kind: { group: string; version: string; kind: string }) => {
    const key = `${kind.group}/${kind.version}/${kind.kind}`;
    let s = watchSeries.get(key);
    if (!s) watchSeries.set(key, (s = { count: new CounterSeries(metrics.watchEvents, { ...kind }), sizes: new HistogramSeries(metrics.watchEventSizes, { ...kind }) }));
    return s;
  };

  return {
    opened(raw, kind) {
      const req = raw as FastifyRequest['raw'];
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      // RecordLongRunning: CleanScope of the RequestInfo, no suggested verb.
      const info = requestInfo(method, url);
      const scope = cleanScope(info);
      const q = url.indexOf('?');
      const verb = reportedVerb(scope, '', { method, query: q < 0 ? '' : url.slice(q + 1), contentType: header(req.headers['content-type']), info });
      const labels: SliLabels = info.isResourceRequest
        ? { verb, group: info.apiGroup, version: info.apiVersion, resource: info.resource, subresource: info.subresource, scope, component: APISERVER_COMPONENT }
        : { verb, group: '', version: '', resource: '', subresource: info.path, scope, component: APISERVER_COMPONENT };
      metrics.longRunning.inc(labels);
      let open = true;
      const events = eventSeries(kind);
      const t = tracked.get(raw);
      return {
        event(objectBytes) {
          events.count.inc();
          events.sizes.observe(objectBytes);
        },
        bodyWritten(bytes) {
          if (t) t.bytes += bytes;
        },
        closed() {
          if (!open) return;
          open = false;
          metrics.longRunning.dec(labels);
        },
      };
    },
  };
}

function verbInput(req: FastifyRequest, info: RequestInfo): VerbInput {
  const q = req.url.indexOf('?');
  return { method: req.method, query: q < 0 ? '' : req.url.slice(q + 1), contentType: header(req.headers['content-type']), info };
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The installer.go action this request reached, or undefined when upstream has no such route (a
 * verb the resource does not serve, HEAD, POST to an item, a subresource it lacks...).
 */
function routeAction(req: FastifyRequest, reply: FastifyReply, index: ResourceIndex, info: RequestInfo): Action | undefined {
  const url = req.routeOptions.url;
  if (url === undefined || req.is404) return undefined;
  const method = req.method;
  if (HEALTH_PATHS.has(url)) {
    // InstallPathHandler: InstrumentHandlerFunc("GET", "", "", "", path, "", "" (no component)).
    return { verb: 'GET', scope: '', group: '', version: '', resource: '', subresource: url, component: '' };
  }
  if (url in DISCOVERY_PATHS) {
    // Only the aggregated document goes through the instrumented handler; legacy discovery does not.
    const type = String(reply.getHeader('content-type') ?? '');
    if (!type.includes('as=APIGroupDiscoveryList')) return undefined;
    return { verb: 'GET', scope: '', group: '', version: '', resource: '', subresource: DISCOVERY_PATHS[url], component: APISERVER_COMPONENT };
  }
  if (!info.isResourceRequest) return undefined;
  const def = index.lookup(info.apiGroup, info.apiVersion, info.resource);
  if (!def) return undefined;
  const params = (req.params ?? {}) as { namespace?: string; name?: string };
  const named = params.name !== undefined;
  const allNamespaces = def.namespaced && params.namespace === undefined;
  const watchPath = url.includes('/watch/');
  const collectionScope: Scope = def.namespaced && !allNamespaces ? 'namespace' : 'cluster';
  const verb = actionVerb(def, method, { named, watchPath, allNamespaces, subresource: info.subresource });
  if (!verb) return undefined;
  // installer.go: "/{name}" in the path or POST → resource; all namespaces → cluster; else namespace|cluster.
  const scope: Scope = named || verb === 'POST' ? 'resource' : collectionScope;
  return { verb, scope, group: def.group, version: def.version, resource: def.plural, subresource: info.subresource, component: APISERVER_COMPONENT };
}

/** The action installer.go installs for this method and path shape, if the storage implements its verb. */
function actionVerb(def: ResourceDefinition, method: string, shape: { named: boolean; watchPath: boolean; allNamespaces: boolean; subresource: string }): string | undefined {
  if (shape.subresource) {
    // A status store is a Getter and an Updater (so also PATCH); it lists and watches nothing.
    if (shape.subresource !== 'status' || !hasStatusSubresource(def) || !shape.named || shape.watchPath) return undefined;
    return method === 'DELETE' ? undefined : pick(STATUS_VERBS, ITEM_ACTIONS[method]);
  }
  const verbs = servedVerbs(def);
  if (shape.watchPath) return method === 'GET' && verbs.includes('watch') ? (shape.named ? 'WATCH' : 'WATCHLIST') : undefined;
  if (shape.named) {
    return pick(verbs, ITEM_ACTIONS[method]);
  }
  // Across all namespaces upstream installs only LIST and WATCHLIST.
  if (shape.allNamespaces) return method === 'GET' ? pick(verbs, COLLECTION_ACTIONS.GET) : undefined;
  return pick(verbs, COLLECTION_ACTIONS[method]);
}

const verbsOf = new WeakMap<ResourceDefinition, readonly Verb[]>();
/** restVerbs, once per resource: actionVerb runs for every request. */
function servedVerbs(def: ResourceDefinition): readonly Verb[] {
  let verbs = verbsOf.get(def);
  if (!verbs) verbsOf.set(def, verbs = restVerbs(def.rest));
  return verbs;
}

type ActionFor = Partial<Record<string, readonly [string, Verb]>>;
/** installer.go's actions by HTTP method, with the storage verb each needs (isGetter, isUpdater...). */
const ITEM_ACTIONS: ActionFor = { GET: ['GET', 'get'], PUT: ['PUT', 'update'], PATCH: ['PATCH', 'patch'], DELETE: ['DELETE', 'delete'] };
const COLLECTION_ACTIONS: ActionFor = { GET: ['LIST', 'list'], POST: ['POST', 'create'], DELETE: ['DELETECOLLECTION', 'deletecollection'] };

function pick(served: readonly Verb[], candidate: readonly [string, Verb] | undefined): string | undefined {
  return candidate && served.includes(candidate[1]) ? candidate[0] : undefined;
}

function byteCount(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/** ResponseWriterDelegator.ContentLength: the body bytes the handler wrote. */
function countBodyBytes(res: ServerResponse, t: Tracked): void {
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => ServerResponse;
  // HTTP/2's end(data) writes through write(): count those bytes once.
  let ending = false;
  res.write = function (...args: unknown[]) {
    if (!ending) t.bytes += byteCount(args[0], args[1]);
    return write.apply(res, args);
  } as typeof res.write;
  res.end = function (...args: unknown[]) {
    t.bytes += byteCount(args[0], args[1]);
    ending = true;
    try { return end.apply(res, args); } finally { ending = false; }
  } as typeof res.end;
}
