// Wiring of audit into fastify. WithAuditInit (pkg/endpoints/filters/audit_init.go:33-62): every
// request gets the Audit-ID its caller sent (kube-apiserver sends one when it proxies to us) or a
// new UUID, echoed as the Audit-Id response header and bound as `auditID` on the request's logger.
// With a policy and a log, RequestAudit writes the events; the auth chain is wrapped to learn the
// authenticated user and the authorization decision, as WithAudit and WithAuthorization see them.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../apimachinery/status.js';
import { truncatedAuditId } from '../../apimachinery/auditId.js';
import { toApiError } from '../../endpoints/http.js';
import { headersDistinct } from '../../endpoints/protocol.js';
import { isAlwaysAllowedPath, type AuthChain } from '../auth/plugin.js';
import { anonymous, type Authenticator, type Authorizer, type UserInfo } from '../auth/types.js';
import { nowMicros, statusOf } from './eventParts.js';
import { RequestAudit, type Auditing } from './requestAudit.js';

declare module 'fastify' {
  interface FastifyRequest { auditContext: RequestAudit }
}

type RawRequest = Parameters<typeof headersDistinct>[0];
const auditIDs = new WeakMap<object, string>();

/** The request's Audit-ID: the first Audit-ID header as sent (no truncation, as upstream), else a new UUID. */
export function auditIdOf(raw: object): string {
  let id = auditIDs.get(raw);
  if (id === undefined) {
    // The parsed header is the first value unless the header came several times (then joined by ", ").
    const sent = (raw as RawRequest).headers['audit-id'];
    // No header is the common case: then there is nothing to split.
    const first = typeof sent !== 'string' || sent.includes(',') ? sent && headersDistinct(raw as RawRequest)['audit-id']?.[0] : sent;
    id = first || randomUUID();
    auditIDs.set(raw, id);
  }
  return id;
}

/** fastify's genReqId: the request id its log lines carry is the Audit-ID, truncated as klog's. */
export function auditIdForLogs(raw: object): string {
  return truncatedAuditId(auditIdOf(raw));
}

/** Register before the authentication plugin and every route. */
export function installAudit(app: FastifyInstance, auditing: Auditing | undefined): void {
  app.decorateRequest('auditContext', null as unknown as RequestAudit);
  // A callback hook, not async: it runs on every request and a promise per hook is measurable.
  app.addHook('onRequest', (req, reply, done) => {
    const id = auditIdOf(req.raw);
    // Without a policy nothing is recorded: the Audit-Id header is all there is to do.
    if (auditing) req.auditContext = new RequestAudit(id, nowMicros(), reply, auditing);
    // On the raw response: hijacked responses (LIST, WATCH) write their headers themselves.
    try { reply.raw.setHeader('Audit-Id', id); } catch { /* a value Node will not echo */ }
    done();
  });
  if (!auditing) return;
  app.addHook('preHandler', async (req) => { req.auditContext?.requestBody(req, req.body); });
  app.addHook('onSend', async (req, _reply, payload) => {
    const ctx = req.auditContext;
    // Our errors (and success Statuses) are JSON text that starts with the Status kind.
    if (ctx?.enabled && typeof payload === 'string' && payload.startsWith('{"kind":"Status"')) {
      try {
        const status = statusOf(JSON.parse(payload));
        if (status) ctx.responseStatus(status);
      } catch { /* not JSON after all */ }
    }
    return payload;
  });
  app.addHook('onError', async (req, _reply, err) => {
    // A failure that is not an API error is the equivalent of a Go handler panic.
    if (!(err instanceof ApiError) && toApiError(err).code === 500) req.auditContext?.panicked(err.message);
  });
}

/** As the auth plugin completes it: every authenticated user is in system:authenticated. */
function withAuthenticatedGroup(user: UserInfo): UserInfo {
  return user.groups.includes('system:authenticated') ? user : { ...user, groups: [...user.groups, 'system:authenticated'] };
}

/**
 * The same chain, observed: one authenticator that runs the chain's own in order and tells the
 * request's audit who was authenticated (or that authentication failed), and an authorizer that
 * records the request's decision as the authorization.k8s.io/decision and /reason annotations
 * (pkg/endpoints/filters/authorization.go:40-97). Read through on every request, so a chain
 * completed later at start-up is seen.
 */
export function auditedAuthChain(chain: AuthChain): AuthChain {
  const authenticator: Authenticator = {
    async authenticate(req) {
      const ctx = req.auditContext;
      let user: UserInfo | undefined;
      try {
        for (const a of chain.authenticators) {
          user = await a.authenticate(req);
          if (user) break;
        }
      } catch (e) {
        ctx?.begin(req, undefined);
        throw e;
      }
      if (user) user = withAuthenticatedGroup(user);
      // Standalone refuses anonymous callers outside the health endpoints: a failed authentication.
      const failed = !user && chain.rejectAnonymous && !isAlwaysAllowedPath(req.info.path);
      ctx?.begin(req, failed ? undefined : user ?? anonymous);
      return user;
    },
  };
  const authorizer: Authorizer = {
    async authorize(user, info, req) {
      const main = info === req.info;
      try {
        const d = await chain.authorizer.authorize(user, info, req);
        if (main) {
          req.auditContext?.annotate('authorization.k8s.io/decision', d.allowed ? 'allow' : 'forbid');
          req.auditContext?.annotate('authorization.k8s.io/reason', d.reason ?? '');
        }
        return d;
      } catch (e) {
        if (main) req.auditContext?.annotate('authorization.k8s.io/reason', 'internal error');
        throw e;
      }
    },
  };
  const authenticators = [authenticator];
  return {
    get authenticators() { return authenticators; },
    get authorizer() { return authorizer; },
    get rejectAnonymous() { return chain.rejectAnonymous; },
  };
}
