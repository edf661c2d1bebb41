// Delegated authentication and authorization as k8s.io/apiserver does it for an aggregated server:
// trust comes from kube-system/extension-apiserver-authentication (watched, so CA rotation needs no
// restart); tokens via TokenReview; decisions via SubjectAccessReview; both cached 10 s.
import { headerText, headerValues as utf8HeaderValues } from './headers.js';
import { createHash, type X509Certificate } from 'node:crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { headersDistinct } from '../../endpoints/protocol.js';
import type { RequestInfo } from '../../endpoints/requestInfo.js';
import { parseFieldSelector } from '../../apimachinery/fields.js';
import { parseLabelSelector, type LabelOperator } from '../../apimachinery/labels.js';
import { errors } from '../../apimachinery/status.js';
import { inSpan } from '../../apimachinery/tracing.js';
import type { Attributes } from '@opentelemetry/api';
import type { Upstream } from '../../upstream/client.js';
import { Reflector, type RawObject } from '../../upstream/reflector.js';
import type { Authenticator, Authorizer, Decision, UserInfo } from './types.js';
import { commonName, organizations, parsePemBundle, peerCert, verifiesAgainst } from './x509.js';

export interface AuthenticationTrust {
  clientCA: X509Certificate[];
  clientCAPem: string;
  requestHeader: {
    ca: X509Certificate[];
    caPem: string;
    allowedNames: string[];
    usernameHeaders: string[];
    uidHeaders: string[];
    groupHeaders: string[];
    extraPrefixes: string[];
  };
}

const jsonList = (v: unknown): string[] => {
  if (typeof v !== 'string' || v === '') return [];
  try { const a = JSON.parse(v) as unknown; return Array.isArray(a) ? a.map(String) : []; } catch { return []; }
};

export function parseTrust(cm: RawObject | undefined): AuthenticationTrust {
  const data = (cm?.data ?? {}) as Record<string, string>;
  return {
    clientCA: parsePemBundle(data['client-ca-file']),
    clientCAPem: data['client-ca-file'] ?? '',
    requestHeader: {
      ca: parsePemBundle(data['requestheader-client-ca-file']),
      caPem: data['requestheader-client-ca-file'] ?? '',
      allowedNames: jsonList(data['requestheader-allowed-names']),
      usernameHeaders: jsonList(data['requestheader-username-headers']).map((h) => h.toLowerCase()),
      uidHeaders: jsonList(data['requestheader-uid-headers']).map((h) => h.toLowerCase()),
      groupHeaders: jsonList(data['requestheader-group-headers']).map((h) => h.toLowerCase()),
      extraPrefixes: jsonList(data['requestheader-extra-headers-prefix']).map((h) => h.toLowerCase()),
    },
  };
}

/** Keeps the trust ConfigMap current; `onChange` gets the new trust (e.g. to update the TLS CA list). */
export class TrustSource {
  current: AuthenticationTrust = parseTrust(undefined);
  readonly reflector: Reflector;

  constructor(upstream: Upstream, log: FastifyBaseLogger, onChange: (t: AuthenticationTrust) => void) {
    const set = (cm: RawObject | undefined) => { this.current = parseTrust(cm); onChange(this.current); };
    this.reflector = new Reflector(upstream, {
      purpose: 'authentication-configmap',
      path: '/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dextension-apiserver-authentication',
      log,
    }, {
      replace: (items) => set(items[0]),
      event: (type, obj) => set(type === 'DELETED' ? undefined : obj),
    });
  }
}

function headerValues(req: FastifyRequest, name: string): string[] {
  return utf8HeaderValues(headersDistinct(req.raw), name);
}

/** Front-proxy identity: X-Remote-* trusted only from a client cert of the requestheader CA with an allowed CN. */
export function requestHeaderAuthenticator(trust: () => AuthenticationTrust): Authenticator {
  return {
    async authenticate(req) {
      const rh = trust().requestHeader;
      const claimsIdentity = rh.usernameHeaders.some((h) => headerValues(req, h).length > 0) || headerValues(req, 'x-remote-user').length > 0;
      const peer = peerCert(req.raw);
      if (!peer || !verifiesAgainst(peer, rh.ca)) {
        // Identity headers from anyone but the front proxy are a spoofing attempt, not anonymity.
        if (claimsIdentity) throw errors.unauthorized();
        return undefined;
      }
      const cn = commonName(peer.subject) ?? '';
      if (rh.allowedNames.length && !rh.allowedNames.includes(cn)) {
        req.log.info({ cn }, `x509: subject with cn=${cn} is not in the allowed list`);
        throw errors.unauthorized();
      }
      const username = rh.usernameHeaders.map((h) => headerValues(req, h)[0]).find((v) => v);
      if (!username) return undefined;
      const uid = rh.uidHeaders.map((h) => headerValues(req, h)[0]).find((v) => v);
      const groups = rh.groupHeaders.flatMap((h) => headerValues(req, h));
      const extra: Record<string, string[]> = {};
      for (const [name, values] of Object.entries(headersDistinct(req.raw))) {
        const prefix = rh.extraPrefixes.find((p) => name.startsWith(p));
        if (!prefix || !values) continue;
        const key = pathUnescape(name.slice(prefix.length)).toLowerCase();
        (extra[key] ??= []).push(...values.map(headerText));
      }
      return { username, uid, groups, extra };
    },
  };
}

/** url.PathUnescape, keeping the escaped form when it is malformed (as upstream's newExtra does). */
function pathUnescape(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

/** An ordinary client certificate from client-ca-file: user = CN, groups = O. */
export function clientCertAuthenticator(trust: () => AuthenticationTrust): Authenticator {
  return {
    async authenticate(req) {
      const peer = peerCert(req.raw);
      if (!peer || !verifiesAgainst(peer, trust().clientCA)) return undefined;
      const cn = commonName(peer.subject);
      if (!cn) return undefined;
      return { username: cn, groups: organizations(peer.subject), extra: {} };
    },
  };
}

class TtlCache<V> {
  private readonly map = new Map<string, { value: V; expires: number }>();
  constructor(private readonly ttlMs: number, private readonly max = 10_000) {}
  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (e.expires < Date.now()) { this.map.delete(key); return undefined; }
    return e.value;
  }
  set(key: string, value: V): void {
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!);
    this.map.set(key, { value, expires: Date.now() + this.ttlMs });
  }
}

interface TokenReviewStatus { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string }

/** Bearer tokens checked with TokenReview, results cached 10 s (keyed by the token's hash). */
export function tokenReviewAuthenticator(upstream: Upstream, ttlMs = 10_000): Authenticator {
  const cache = new TtlCache<UserInfo | null>(ttlMs);
  return {
    async authenticate(req) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m) return undefined;
      const key = createHash('sha256').update(m[1]).digest('hex');
      let user = cache.get(key);
      if (user === undefined) {
        // An unreachable kube-apiserver fails authentication (401), as upstream's webhook authenticator does.
        const res = await inSpan('TokenReview', () => ({}), () => upstream.request<{ status?: TokenReviewStatus }>('tokenreview', 'POST', '/apis/authentication.k8s.io/v1/tokenreviews',
          { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: m[1] } }))
          .catch((e: Error) => { req.log.warn({ err: e.message }, 'TokenReview failed'); throw errors.unauthorized(); });
        const s = res.body?.status;
        if (res.status !== 201 && res.status !== 200) {
          req.log.warn({ status: res.status }, 'TokenReview failed');
          throw errors.unauthorized();
        }
        user = s?.authenticated && s.user?.username
          ? { username: s.user.username, uid: s.user.uid, groups: s.user.groups ?? [], extra: s.user.extra ?? {} }
          : null;
        cache.set(key, user);
      }
      if (!user) throw errors.unauthorized();
      return user;
    },
  };
}

/** SubjectAccessReview with 10 s allow/deny caches; system:masters skips the review, as upstream's defaults. */
export function subjectAccessReviewAuthorizer(upstream: Upstream, ttlMs = 10_000): Authorizer & { review(user: UserInfo, attrs: Record<string, unknown>): Promise<Decision> } {
  const cache = new TtlCache<Decision>(ttlMs);
  const review = async (user: UserInfo, attrs: Record<string, unknown>, nonResource = false): Promise<Decision> => {
    if (user.groups.includes('system:masters')) return { allowed: true };
    const spec = {
      ...(nonResource ? { nonResourceAttributes: attrs } : { resourceAttributes: attrs }),
      user: user.username, groups: user.groups, extra: user.extra, uid: user.uid ?? '',
    };
    const key = JSON.stringify(spec);
    const hit = cache.get(key);
    if (hit) return hit;
    const res = await inSpan('SubjectAccessReview', () => reviewAttributes(attrs), () => upstream.request<{ status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } }>(
      'subjectaccessreview', 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec }));
    if (res.status !== 201 && res.status !== 200) throw errors.internal(`SubjectAccessReview failed: HTTP ${res.status}`);
    const decision: Decision = { allowed: res.body?.status?.allowed === true, reason: res.body?.status?.reason || undefined };
    cache.set(key, decision);
    return decision;
  };
  return {
    review: (user, attrs) => review(user, attrs),
    async authorize(user: UserInfo, info: RequestInfo) {
      if (!info.isResourceRequest) return review(user, { path: info.path, verb: info.verb }, true);
      const attrs: Record<string, unknown> = { verb: info.verb, group: info.apiGroup, version: info.apiVersion, resource: info.resource };
      if (info.namespace) attrs.namespace = info.namespace;
      if (info.subresource) attrs.subresource = info.subresource;
      if (info.name) attrs.name = info.name;
      Object.assign(attrs, selectorAttributes(info));
      return review(user, attrs);
    },
  };
}

/** What a review asks, for its span (the user is on the request already; never a credential). */
function reviewAttributes(attrs: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const k of ['verb', 'group', 'resource', 'subresource', 'namespace', 'name', 'path'] as const) {
    if (typeof attrs[k] === 'string') out[k] = attrs[k];
  }
  return out;
}

type SelectorRequirement = { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] };

const labelOperators: Partial<Record<LabelOperator, SelectorRequirement['operator']>> = {
  '=': 'In', '==': 'In', in: 'In', '!=': 'NotIn', notin: 'NotIn', exists: 'Exists', '!': 'DoesNotExist',
};

/**
 * AuthorizeWithSelectors (beta, on in 1.32): a list/watch's selectors go into the review as parsed
 * requirements; ones that do not parse or convert (gt/lt) are left out, which only widens the check.
 */
export function selectorAttributes(info: RequestInfo): { fieldSelector?: { requirements: SelectorRequirement[] }; labelSelector?: { requirements: SelectorRequirement[] } } {
  const out: ReturnType<typeof selectorAttributes> = {};
  try {
    const reqs = parseFieldSelector(info.fieldSelector ?? '').map((r): SelectorRequirement => ({ key: r.field, operator: r.operator === '!=' ? 'NotIn' : 'In', values: [r.value] }));
    if (reqs.length) out.fieldSelector = { requirements: reqs };
  } catch { /* unparsable: not limited */ }
  try {
    const reqs: SelectorRequirement[] = [];
    for (const r of parseLabelSelector(info.labelSelector ?? '')) {
      const operator = labelOperators[r.operator];
      if (!operator) continue;
      reqs.push(operator === 'Exists' || operator === 'DoesNotExist' ? { key: r.key, operator } : { key: r.key, operator, values: [...r.values] });
    }
    if (reqs.length) out.labelSelector = { requirements: reqs };
  } catch { /* unparsable: not limited */ }
  return out;
}
