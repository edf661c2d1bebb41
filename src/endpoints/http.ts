// The one place errors become HTTP responses: every non-2xx is a metav1.Status.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { isHttp2 } from './protocol.js';
import { requestInfo, type RequestInfo } from './requestInfo.js';
import { ApiError, errors, type Status } from '../apimachinery/status.js';

export function sendError(reply: FastifyReply, err: ApiError): FastifyReply {
  const status = err.toStatus();
  if (err.details?.retryAfterSeconds) reply.header('Retry-After', String(err.details.retryAfterSeconds));
  return reply.code(err.code).type('application/json').send(JSON.stringify(status));
}

/** Maps fastify's own errors (body parsing, size limits) and unexpected throws onto Kubernetes reasons. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const fe = err as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.tooLarge('Request entity too large: limit is 3145728');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(['application/json', 'application/yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml']);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.badRequest('the request body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.badRequest(`the request body is not valid JSON: ${fe.message ?? ''}`);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('the request body length does not match Content-Length');
  }
  // Input nested past what the runtime's recursion reaches: the client's object, not our failure.
  if (err instanceof RangeError && /call stack/i.test(err.message)) return errors.badRequest('the object is nested too deeply to be processed');
  const statusCode = fe.statusCode;
  if (statusCode && statusCode >= 400 && statusCode < 500) return errors.badRequest(fe.message ?? 'bad request');
  if (statusCode === 503) return errors.serviceUnavailable(fe.message ?? 'the server is currently unable to handle the request');
  return errors.internal(fe.message ?? String(err));
}

/** What the server serves at a resource path: the resource (undefined: not ours) and its subresources. */
export type ServedAt = (info: RequestInfo) => { subresources: readonly string[] } | undefined;

export function installErrorHandling(app: FastifyInstance, servedAt?: ServedAt): void {
  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    // Only failures of ours: a 503/504 (not ready, a resourceVersion not reached) is a client's to retry.
    if (apiErr.code === 500) req.log.error({ err }, 'request failed');
    return sendError(reply, apiErr);
  });
  app.setNotFoundHandler((req, reply) => {
    // A path we serve with a method we do not: the router matched the path, so 405 (as go-restful).
    const info = requestInfo(req.method, req.url);
    const served = info.isResourceRequest ? servedAt?.(info) : undefined;
    // A subresource the resource does not have: the CRD handler answers NotFound naming the object.
    if (served && info.name && info.subresource && !served.subresources.includes(info.subresource)) {
      return sendError(reply, errors.notFound({ group: info.apiGroup, resource: info.resource }, info.name));
    }
    if (served) return sendError(reply, new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'));
    return sendError(reply, errors.pathNotFound());
  });
}

/** The code of a clientError for a head that parsed but that Go's server refuses (server/http1Framing.ts); it has a statusCode. */
export const HTTP1_REFUSED = 'ERR_HTTP1_REFUSED' as const;

/**
 * Errors Node's HTTP parser meets before there is a request (fastify's clientErrorHandler): a Status on
 * the raw socket, then the connection closes. Header timeouts close silently, as Go's server does.
 */
export function clientErrorHandler(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A header timeout, or a TLS failure (no HTTP was spoken): close without writing, as Go does.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || /^ERR_(TLS|SSL)/.test(err.code ?? '')) { socket.destroy(); return; }
  let code = 400;
  let message = `malformed HTTP request: ${err.code ?? 'parse error'}`;
  if (err.code === HTTP1_REFUSED) {
    code = (err as Error & { statusCode: number }).statusCode;
    message = err.message;
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    code = 431;
    message = 'request header fields too large';
  } else if (err.code === 'HPE_INVALID_METHOD') {
    // Go accepts any method token; kube then answers that the method is not allowed.
    const method = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1').split(' ', 1)[0] : '';
    if (/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(method)) {
      code = 405;
      message = 'the server does not allow this method on the requested resource';
    }
  }
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code,
    ...(code === 405 ? { reason: 'MethodNotAllowed' as const } : code === 400 ? { reason: 'BadRequest' as const } : {}) };
  const body = JSON.stringify(status);
  const answer = () => {
    if (socket.writable) {
      socket.write(`HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroySoon?.();
    setTimeout(() => socket.destroy(), 1000).unref();
  };
  // Pipelined after a request still being answered: that answer goes first (it may be a committed
  // write), then this one, in order, as Go's server does.
  const pending = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  // (A request whose own body failed to parse has no answer coming: it gets this one at once.)
  if (pending && !pending.writableFinished && pending.req.complete) {
    pending.once('finish', answer);
    pending.once('close', () => { if (!pending.writableFinished) socket.destroy(); });
    return;
  }
  answer();
}

/** `Expect:` values other than 100-continue: 417, as Go answers, with a Status body. */
export function expectationFailed(req: IncomingMessage, res: ServerResponse): void {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the only expectation supported is 100-continue', code: 417 };
  const body = JSON.stringify(status);
  res.writeHead(417, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...(isHttp2(req) ? {} : { Connection: 'close' }) });
  res.end(body);
}
