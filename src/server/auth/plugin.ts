// Authentication and authorization of every request (k8s.io/apiserver's WithAuthentication and
// WithAuthorization filters) as one named fastify plugin: it decorates the request with `info` and
// `user` and answers 401/403 itself, so routes only ever see callers allowed to reach them.
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError, errors } from '../../apimachinery/status.js';
import type { RequestInfo } from '../../apimachinery/types.js';
import { sendError } from '../../endpoints/http.js';
import { requestInfo } from '../../endpoints/requestInfo.js';
import type { ResourceIndex } from '../../registry/resourceIndex.js';
import { impersonatedUser } from './impersonation.js';
import { anonymous, type Authenticator, type Authorizer, type UserInfo } from './types.js';

const ALWAYS_ALLOWED_PATHS = ['/healthz', '/readyz', '/livez'];

/** Authorization's AlwaysAllowPaths: the health endpoints and everything under them. */
export function isAlwaysAllowedPath(path: string): boolean {
  return ALWAYS_ALLOWED_PATHS.some((p) => path === p || path.startsWith(`${p}/`));
}

export interface AuthChain {
  /** Tried in order; the first that recognizes the request's credentials decides. */
  authenticators: Authenticator[];
  /** Standalone answers 401 to anonymous callers; a cluster server authorizes them like anyone. */
  rejectAnonymous: boolean;
  authorizer: Authorizer;
}

declare module 'fastify' {
  interface FastifyRequest { user: UserInfo; info: RequestInfo }
}

export interface AuthPluginOptions {
  /** Read per request, so start-up can complete it once the cluster's trust is known. */
  auth: AuthChain;
  resources: ResourceIndex;
  /**
   * Between authentication and everything after it (WithTracing's place): runs `next`, the rest of the
   * request, in whatever it sets up for this caller.
   */
  afterAuthentication?: (req: FastifyRequest, reply: FastifyReply, next: () => void) => void;
  /** Between impersonation and authorization (WithMaxInFlightLimit's place): an error refuses the request. */
  admit?: (req: FastifyRequest, reply: FastifyReply) => ApiError | undefined;
}

const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async (app: FastifyInstance, { auth, resources, afterAuthentication, admit }) => {
  // Decorated once with fixed shapes, so every request object keeps one hidden class.
  app.decorateRequest('user', null as unknown as UserInfo);
  app.decorateRequest('info', null as unknown as RequestInfo);
  // Callback-style: `done` is called from inside afterAuthentication's `next`, so whatever context
  // it enters (the request's span) carries over to the handler. Closures are made only where needed:
  // this runs on every request.
  app.addHook('onRequest', (req, reply, done) => {
    let authenticated: Promise<UserInfo>;
    try {
      req.info = requestInfo(req.method, req.url);
      authenticated = authenticate(req, auth.authenticators);
    } catch (e) {
      return fail(reply, e);
    }
    authenticated.then((user) => {
      req.user = user;
      req.log.debug({ user, httpVersion: req.raw.httpVersion }, 'authenticated');
      if (afterAuthentication) afterAuthentication(req, reply, () => authorizeThen(req, reply, done));
      else authorizeThen(req, reply, done);
    }, (e: unknown) => fail(reply, e)).catch((e: unknown) => pipelineThrew(reply, e));
  });

  function authorizeThen(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    authorize(req, reply).then(() => done(), (e: unknown) => fail(reply, e)).catch((e: unknown) => pipelineThrew(reply, e));
  }

  async function authorize(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Probes are always allowed, but still pass the in-flight limit.
    const alwaysAllowed = isAlwaysAllowedPath(req.info.path);
    if (!alwaysAllowed) {
      if (req.user === anonymous && auth.rejectAnonymous) throw errors.unauthorized();
      req.user = await impersonatedUser(req, req.user, auth.authorizer, forbidden);
    }
    const refused = admit?.(req, reply);
    if (refused) throw refused;
    if (alwaysAllowed) return;
    const decision = await auth.authorizer.authorize(req.user, req.info, req);
    if (!decision.allowed) throw forbidden(req.user, req.info, decision.reason);
    const info = req.info;
    const def = info.isResourceRequest ? resources.lookup(info.apiGroup, info.apiVersion, info.resource) : undefined;
    for (const extra of def?.alsoRequires?.(info) ?? []) {
      const d = await auth.authorizer.authorize(req.user, extra.info, req);
      if (!d.allowed) throw forbidden(req.user, extra.info, d.reason ? `${d.reason}; ${extra.why}` : extra.why);
    }
  }
};

function fail(reply: FastifyReply, e: unknown): void {
  sendError(reply, e instanceof ApiError ? e : errors.internal(String(e)));
}

/**
 * A throw past authentication (afterAuthentication, or fastify's chain that `done` starts, which
 * guards itself): answered if nothing was yet, so the request neither hangs nor goes unhandled.
 */
function pipelineThrew(reply: FastifyReply, e: unknown): void {
  reply.log.error({ err: e }, 'the request pipeline threw');
  if (!reply.sent && !reply.raw.headersSent) fail(reply, e);
}

export const authentication = fp(authPlugin, { name: 'farm-authn-authz', fastify: '5.x' });

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
