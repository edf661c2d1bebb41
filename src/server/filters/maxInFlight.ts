// --max-requests-inflight / --max-mutating-requests-inflight: kube's WithMaxInFlightLimit
// (k8s.io/apiserver pkg/server/filters/maxinflight.go:126-214) as a fastify onRequest hook.
// Registered after authentication, so req.info and req.user are known; a request past its limit is
// answered 429 before any handler work (decoding, storage, serialization).
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../apimachinery/status.js';
import type { RequestInfo } from '../../apimachinery/types.js';
import { sendError } from '../../endpoints/http.js';
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
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/livez']);

function exempt(info: RequestInfo): boolean {
  return isLongRunning(info) || (!info.isResourceRequest && info.verb === 'get' && PROBE_PATHS.has(info.path));
}

export function tooManyRequests(): ApiError {
  return new ApiError(429, 'TooManyRequests', MESSAGE, { retryAfterSeconds: RETRY_AFTER_SECONDS });
}

export function installMaxInFlight(app: FastifyInstance, limiter: InFlightLimiter): void {
  // A callback hook, not async: it runs on every request and a promise per hook is measurable.
  app.addHook('onRequest', (req, reply, done) => {
    const info = req.info as RequestInfo | null;
    if (!info || exempt(info)) return done();
    const kind = requestKindOf(info.verb);
    if (limiter.tryAcquire(kind)) {
      // 'close' comes for every ending: completed, failed or abandoned by the client.
      reply.raw.once('close', () => limiter.release(kind));
      return done();
    }
    // maxinflight.go:200-207: a system:masters caller is always served (loopback, super-admin).
    if (req.user?.groups.includes('system:masters')) return done();
    sendError(reply, tooManyRequests());
  });
}
