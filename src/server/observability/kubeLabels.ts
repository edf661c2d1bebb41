// Label values of kube-apiserver's request metrics, as k8s.io/apiserver v0.33 computes them
// (pkg/endpoints/metrics/metrics.go: CanonicalVerb, CleanVerb, cleanVerb, CleanScope, cleanDryRun;
// pkg/server/filters/longrunning.go: BasicLongRunningRequestCheck with kube-apiserver's arguments).
import type { RequestInfo } from '../../apimachinery/types.js';

export type Scope = 'resource' | 'namespace' | 'cluster' | '';

/** validRequestMethods: anything else is reported as "other", so made-up methods cannot grow the label set. */
const VALID_VERBS = new Set(['APPLY', 'CONNECT', 'CREATE', 'DELETE', 'DELETECOLLECTION', 'GET', 'LIST', 'PATCH', 'POST', 'PROXY', 'PUT', 'UPDATE', 'WATCH', 'WATCHLIST']);
/** validConnectRequests: subresources reported as CONNECT. */
const CONNECT_SUBRESOURCES = new Set(['log', 'exec', 'portforward', 'attach', 'proxy']);
const APPLY_PATCH_TYPE = 'application/apply-patch+yaml';

/** What of a request the verb label depends on. */
export interface VerbInput {
  method: string;
  /** The raw query string (after '?', possibly empty). */
  query: string;
  /** The Content-Type header exactly as sent (upstream compares the whole header). */
  contentType: string | undefined;
  info: Pick<RequestInfo, 'isResourceRequest' | 'subresource'> | undefined;
}

/** CanonicalVerb: GET (and HEAD) of a collection is LIST. */
export function canonicalVerb(method: string, scope: Scope): string {
  if (method === 'GET' || method === 'HEAD') return scope !== 'resource' && scope !== '' ? 'LIST' : 'GET';
  return method;
}

/** getVerbIfWatch: a GET whose first `watch` parameter is anything but 0/false is a WATCH. */
function isWatchQuery(method: string, query: string): boolean {
  if (method !== 'GET' && method !== 'LIST') return false;
  const first = new URLSearchParams(query).getAll('watch')[0];
  return first !== undefined && first.toLowerCase() !== '0' && first.toLowerCase() !== 'false';
}

/** CleanVerb: WATCH for watch queries and WATCHLIST, APPLY for apply patches, CONNECT for streaming subresources. */
export function cleanVerb(verb: string, r: VerbInput): string {
  let reported = verb;
  if (isWatchQuery(r.method, r.query)) reported = 'WATCH';
  if (verb === 'WATCHLIST') reported = 'WATCH';
  if (verb === 'PATCH' && r.contentType === APPLY_PATCH_TYPE) reported = 'APPLY';
  if (r.info?.isResourceRequest && r.info.subresource && CONNECT_SUBRESOURCES.has(r.info.subresource)) reported = 'CONNECT';
  return reported;
}

/**
 * The verb label: cleanVerb(CanonicalVerb(method, scope), suggestedVerb, ...). `suggested` is the
 * route's action verb (installer.go), "" where there is none (long-running gauge, dropped requests).
 */
export function reportedVerb(scope: Scope, suggested: string, r: VerbInput): string {
  if (suggested === 'WATCH' || suggested === 'WATCHLIST') return 'WATCH';
  const verb = cleanVerb(canonicalVerb(r.method.toUpperCase(), scope), r);
  return VALID_VERBS.has(verb) ? verb : 'other';
}

/** CleanScope: the scope from RequestInfo (name or create: resource; a namespace: namespace; else cluster). */
export function cleanScope(info: Pick<RequestInfo, 'isResourceRequest' | 'name' | 'verb' | 'namespace'>): Scope {
  if (info.name !== '' || info.verb === 'create') return 'resource';
  if (info.namespace !== '') return 'namespace';
  if (info.isResourceRequest) return 'cluster';
  return '';
}

/** cleanDryRun: "" without dryRun; the sorted, de-duplicated values; "invalid" for anything but All. */
export function cleanDryRun(query: string): string {
  if (!query.includes('dryRun')) return '';
  const values = new URLSearchParams(query).getAll('dryRun');
  if (values.some((v) => v !== 'All')) return 'invalid';
  return [...new Set(values)].sort().join(',');
}

/**
 * A float as Go's strconv.FormatFloat(f, 'g', -1, 64) writes it, which is how client_golang writes
 * `le` (1e+06, not 1000000): both keep the shortest round-tripping digits.
 */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mantissa, expText] = f.toExponential().split('e');
  const exp = Number(expText);
  // Go switches to the exponent form below 1e-4 and from 1e6 (precision 6 when shortest).
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(f);
}
