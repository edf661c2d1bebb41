// --max-requests-inflight / --max-mutating-requests-inflight: kube's WithMaxInFlightLimit
// (k8s.io/apiserver pkg/server/filters/maxinflight.go:126-214) as a fastify onRequest hook.
// Run by the authorization plugin after impersonation, so req.info and req.user are known; a request
// past its limit is answered 429 before authorization and any handler work.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../apimachinery/status.js';
import type { RequestInfo } from '../../apimachinery/types.js';
import { InFlightLimiter, requestKindOf } from './inFlightLimiter.js';
import { isLongRunning } from './longRunning.js';

/** maxinflight.go:37 retryAfter, and tooManyRequests' message (priority-and-fairness.go:377-381). */
const RETRY_AFTER_SECONDS = 1;
const MESSAGE = 'Too many requests, please try again later.';

/**
 * kube-apiserver's suggested APF FlowSchema "probes" puts GET /healthz, /readyz and /livez in the
 * exempt priority level (k8s.io/apiserver pkg/apis/flowcontrol/bootstrap/default.go:284-294):
 * kubelet probes are never rejected for load.
 */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/livez']);

function exempt(info: RequestInfo): boolean {
  return isLongRunning(info) || (!info.isResourceRequest && info.verb === 'get' && PROBE_PATHS.has(info.path));
}

export function tooManyRequests(): ApiError {
  return new ApiError(429, 'TooManyRequests', MESSAGE, { retryAfterSeconds: RETRY_AFTER_SECONDS });
}

/**
 * The admission step the authorization plugin runs between impersonation and authorization, where
 * config.go puts WithMaxInFlightLimit: a request past its limit is refused before its
 * SubjectAccessReview is made. Returns the 429 to answer, or undefined once the request holds a slot.
 */
export function maxInFlightAdmission(limiter: InFlightLimiter): (req: FastifyRequest, reply: FastifyReply) => ApiError | undefined {
  return (req, reply) => {
    const info = req.info;
    if (exempt(info)) return undefined;
    const kind = requestKindOf(info.verb);
    if (limiter.tryAcquire(kind)) {
      // 'close' comes once for every ending: completed, failed or abandoned by the client.
      reply.raw.on('close', () => limiter.release(kind));
      return undefined;
    }
    // maxinflight.go:200-207: a system:masters caller is always served (loopback, super-admin); the
    // user is the impersonated one, as WithImpersonation runs first.
    if (req.user.groups.includes('system:masters')) return undefined;
    // maxinflight.go answers text/plain; the issue asks for a Status, which clients decode the same.
    return tooManyRequests();
  };
}
