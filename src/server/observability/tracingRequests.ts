// The server span of each request, as k8s.io/apiserver's WithTracing (otelhttp's handler): a child of
// the incoming W3C traceparent (tracestate kept), named "<METHOD> <route template>" for resource
// requests and "<METHOD>" otherwise, with otelhttp's HTTP attributes plus http.target and the
// Audit-ID. It wraps the whole request (fastify's hooks, body reading, handler), so authentication,
// storage and serialization spans become its children through the active context.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { requestInfo, type RequestInfo } from '../../endpoints/requestInfo.js';
import { spanClock } from '../../apimachinery/tracing.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** getSpanNameFromRequestInfo (filters/traces.go): names and namespaces become placeholders. */
export function spanName(method: string, info: RequestInfo): string {
  if (!info.isResourceRequest) return method;
  let name = info.path.startsWith('/apis/') ? '/apis' : '/api';
  if (info.apiGroup) name += `/${info.apiGroup}`;
  name += `/${info.apiVersion}`;
  if (info.namespace) name += '/namespaces/{:namespace}';
  name += `/${info.resource}`;
  if (info.name) name += '/{:name}';
  if (info.subresource) name += `/${info.subresource}`;
  return `${method} ${name}`;
}

function requestAttributes(req: IncomingMessage): Attributes {
  const socket = req.socket as TLSSocket | undefined;
  const host = req.headers.host ?? req.headers[':authority'];
  const hostText = typeof host === 'string' ? host : '';
  const colon = hostText.lastIndexOf(':');
  const attrs: Attributes = {
    'http.method': req.method ?? '',
    'http.scheme': 'https',
    'http.target': req.url ?? '',
    'net.host.name': colon > 0 && !hostText.endsWith(']') ? hostText.slice(0, colon) : hostText,
    'net.protocol.version': req.httpVersion === '2.0' ? '2' : req.httpVersion,
  };
  if (colon > 0 && /^\d+$/.test(hostText.slice(colon + 1))) attrs['net.host.port'] = Number(hostText.slice(colon + 1));
  if (socket?.remoteAddress) attrs['net.sock.peer.addr'] = socket.remoteAddress;
  if (socket?.remotePort) attrs['net.sock.peer.port'] = socket.remotePort;
  const ua = req.headers['user-agent'];
  if (ua) attrs['user_agent.original'] = ua;
  const length = Number(req.headers['content-length']);
  if (length > 0) attrs['http.request_content_length'] = length;
  return attrs;
}

function endServerSpan(span: Span, res: ServerResponse): void {
  if (span.isRecording()) {
    span.setAttribute('http.status_code', res.statusCode);
    const auditId = res.getHeader('audit-id');
    if (typeof auditId === 'string') span.setAttribute('audit-id', auditId);
    // otelhttp's server rule: only a 5xx is the server's error.
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    // A response cut off before it was complete (client gone, connection reset).
    if (!res.writableEnded) span.addEvent('response not completed');
  }
  span.end(spanClock());
}

/** Wraps the HTTP server's request handler; installed only when tracing is configured. */
export function tracedHandler(tracer: Tracer, handler: RequestHandler): RequestHandler {
  return (req, res) => {
    const method = req.method ?? 'GET';
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    let name = method;
    try { name = spanName(method, requestInfo(method, req.url ?? '/')); } catch { /* the bare method */ }
    const span = tracer.startSpan(name, { kind: SpanKind.SERVER, startTime: spanClock() }, parent);
    if (span.isRecording()) span.setAttributes(requestAttributes(req));
    // Even an unsampled span is made active: outgoing calls then carry sampled=0 on, as otelhttp does.
    const ctx = trace.setSpan(parent, span);
    // Body chunks and response events are emitted outside the request's async context: bind them.
    context.bind(ctx, req);
    context.bind(ctx, res);
    res.once('close', () => endServerSpan(span, res));
    context.with(ctx, () => handler(req, res));
  };
}
