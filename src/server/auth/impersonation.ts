// Impersonate-* headers, as k8s.io/apiserver's WithImpersonation handles them: each requested identity
// is authorized as the verb "impersonate" on users/groups/serviceaccounts/uids/userextras, then the
// request runs as the impersonated user. Never ignored: either honoured or refused.
import type { FastifyRequest } from 'fastify';
import { dns1123LabelErrors, dns1123SubdomainErrors } from '../../apimachinery/names.js';
import { headersDistinct } from '../../endpoints/protocol.js';
import type { RequestInfo } from '../../endpoints/requestInfo.js';
import { ApiError, errors } from '../../apimachinery/status.js';
import { headerValues } from './headers.js';
import type { Authorizer, UserInfo } from './types.js';

const extraPrefix = 'impersonate-extra-';

interface Wanted { info: RequestInfo; apply(u: UserInfo): void }

function attributes(resource: string, name: string, opts: { apiGroup?: string; namespace?: string; subresource?: string } = {}): RequestInfo {
  return {
    isResourceRequest: true, path: '', verb: 'impersonate', apiGroup: opts.apiGroup ?? '', apiVersion: 'v1',
    namespace: opts.namespace ?? '', resource, subresource: opts.subresource ?? '', name,
  };
}

/** serviceaccount.SplitUsername: only a valid namespace and name make a service account; else a user. */
function serviceAccountOf(username: string): [string, string, string] | undefined {
  const m = /^system:serviceaccount:([^:]*):([^:]*)$/.exec(username);
  if (!m || dns1123LabelErrors(m[1]).length || dns1123SubdomainErrors(m[2]).length) return undefined;
  return [m[0], m[1], m[2]];
}

function unescapeExtraKey(key: string): string {
  try { return decodeURIComponent(key); } catch { return key; }
}

/** The identities a request asks to act as, in upstream's order; throws 400 for groups/extra/uid without a user. */
function wantedIdentities(req: FastifyRequest): { wanted: Wanted[]; defaultGroups: string[] } {
  const raw = headersDistinct(req.raw);
  const h: NodeJS.Dict<string[]> = {};
  for (const name of Object.keys(raw)) if (name.startsWith('impersonate-')) h[name] = headerValues(raw, name);
  const wanted: Wanted[] = [];
  const userName = h['impersonate-user']?.[0] ?? '';
  const sa = serviceAccountOf(userName);
  const groups = h['impersonate-group'] ?? [];
  if (userName) {
    wanted.push(sa
      ? { info: attributes('serviceaccounts', sa[2], { namespace: sa[1] }), apply: (u) => { u.username = userName; } }
      : { info: attributes('users', userName), apply: (u) => { u.username = userName; } });
  }
  for (const g of groups) wanted.push({ info: attributes('groups', g), apply: (u) => { u.groups.push(g); } });
  let others = groups.length > 0;
  for (const [header, values] of Object.entries(h)) {
    if (!header.startsWith(extraPrefix) || !values) continue;
    const key = unescapeExtraKey(header.slice(extraPrefix.length));
    for (const v of values) {
      others = true;
      wanted.push({ info: attributes('userextras', v, { apiGroup: 'authentication.k8s.io', subresource: key }), apply: (u) => { (u.extra[key] ??= []).push(v); } });
    }
  }
  const uid = h['impersonate-uid']?.[0] ?? '';
  if (uid) {
    others = true;
    wanted.push({ info: attributes('uids', uid, { apiGroup: 'authentication.k8s.io' }), apply: (u) => { u.uid = uid; } });
  }
  // Upstream answers 500 here; it is the client's mistake, so 400.
  if (others && !userName) throw errors.badRequest('requested impersonation of groups, extra or uid without impersonating a user (Impersonate-User)');
  // A service account without Impersonate-Group gets its own groups.
  const defaultGroups = sa && groups.length === 0 ? ['system:serviceaccounts', `system:serviceaccounts:${sa[1]}`] : [];
  return { wanted, defaultGroups };
}

/**
 * The user the request runs as: `user` itself without Impersonate-* headers, else the impersonated
 * one once every requested identity is authorized. `forbidden` words the 403 as the caller's does.
 */
export async function impersonatedUser(req: FastifyRequest, user: UserInfo, authorizer: Authorizer,
  forbidden: (user: UserInfo, info: RequestInfo, reason?: string) => ApiError): Promise<UserInfo> {
  // Most requests impersonate no one: look at the header names before building anything.
  if (!Object.keys(req.headers).some((h) => h.startsWith('impersonate-'))) return user;
  const { wanted, defaultGroups } = wantedIdentities(req);
  if (wanted.length === 0) return user;
  const next: UserInfo = { username: '', groups: [...defaultGroups], extra: {} };
  const checked = new Set<string>();
  for (const w of wanted) {
    const key = JSON.stringify(w.info);
    if (!checked.has(key)) {
      checked.add(key);
      const d = await authorizer.authorize(user, w.info, req);
      if (!d.allowed) throw forbidden(user, w.info, d.reason);
    }
    w.apply(next);
  }
  const anonymousUser = next.username === 'system:anonymous';
  const marker = anonymousUser ? 'system:unauthenticated' : 'system:authenticated';
  if (!next.groups.includes(marker) && (anonymousUser || !next.groups.includes('system:unauthenticated'))) next.groups.push(marker);
  if (!next.uid) delete next.uid;
  return next;
}
