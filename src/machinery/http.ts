// The one place errors become HTTP responses: every non-2xx is a metav1.Status.
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ApiError, errors } from './status.js';

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
  const statusCode = fe.statusCode;
  if (statusCode && statusCode >= 400 && statusCode < 500) return errors.badRequest(fe.message ?? 'bad request');
  return errors.internal(fe.message ?? String(err));
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.code >= 500) req.log.error({ err }, 'request failed');
    return sendError(reply, apiErr);
  });
  app.setNotFoundHandler((_req, reply) => sendError(reply, errors.pathNotFound()));
}
