// The server span of each request, as k8s.io/apiserver's WithTracing (otelhttp's handler), which sits
// right after authentication: a child of the incoming W3C traceparent (tracestate kept) when the
// caller is trusted, named "<METHOD> <route template>" for resource requests and "<METHOD>" otherwise,
// with otelhttp's HTTP attributes plus http.target and the Audit-ID. Authorization, storage and
// serialization spans become its children through the active context. A request refused by
// authentication (401) has no span, as upstream.
import { context, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { RequestInfo } from '../../apimachinery/types.js';
import { collectingEarlySpans, replaySpans, spanClock, type EarlySpan } from '../../apimachinery/tracing.js';
import { truncatedAuditId } from '../../apimachinery/auditId.js';

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
    if (typeof auditId === 'string') span.setAttribute('audit-id', truncatedAuditId(auditId));
    // otelhttp's server rule: only a 5xx is the server's error.
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    // A response cut off before it was complete (client gone, connection reset).
    if (!res.writableEnded) span.addEvent('response not completed');
  }
  span.end(spanClock());
}

interface Arrival { start: number; remote: Context; early: EarlySpan[] }

/** Requests received but not yet authenticated: their span waits for the caller's groups. */
const arrivals = new WeakMap<IncomingMessage, Arrival>();

/**
 * Wraps the HTTP server's request handler; installed only when tracing is configured. The span is
 * timed from here (WithTracing's start time is the received timestamp), but made once authentication
 * knows whose traceparent it is (enterServerSpan); spans of authentication are kept until then.
 */
export function tracedHandler(handler: RequestHandler): RequestHandler {
  return (req, res) => {
    const early: EarlySpan[] = [];
    arrivals.set(req, { start: spanClock(), remote: propagation.extract(ROOT_CONTEXT, req.headers), early });
    context.with(collectingEarlySpans(ROOT_CONTEXT, early), () => handler(req, res));
  };
}

/** notSystemPrivilegedGroup (filters/traces.go): only these callers may make our span a child of theirs. */
const TRUSTED_GROUPS = new Set(['system:masters', 'system:monitoring']);

/**
 * Starts the request's server span and runs `next` (the rest of the request) inside it. As otelhttp
 * with WithPublicEndpointFn: a caller outside the trusted groups starts a new trace that only links
 * to its traceparent, so anyone able to send a header cannot force sampling or join a trace.
 */
export function enterServerSpan(tracer: Tracer, req: IncomingMessage, res: ServerResponse, info: RequestInfo, groups: readonly string[], next: () => void): void {
  const arrival = arrivals.get(req);
  if (!arrival) return next();
  arrivals.delete(req);
  const options: SpanOptions = { kind: SpanKind.SERVER, startTime: arrival.start };
  if (!groups.some((g) => TRUSTED_GROUPS.has(g))) {
    options.root = true;
    const remote = trace.getSpanContext(arrival.remote);
    if (remote && remote.isRemote && isSpanContextValid(remote)) options.links = [{ context: remote }];
  }
  const span = tracer.startSpan(spanName(req.method ?? 'GET', info), options, arrival.remote);
  if (span.isRecording()) {
    span.setAttributes(requestAttributes(req));
    replaySpans(span, arrival.early);
  }
  // Even an unsampled span is made active: outgoing calls then carry sampled=0 on, as otelhttp does.
  const ctx = trace.setSpan(arrival.remote, span);
  // Body chunks and response events are emitted outside the request's async context: bind them.
  context.bind(ctx, req);
  context.bind(ctx, res);
  if (res.destroyed) endServerSpan(span, res);
  else res.once('close', () => endServerSpan(span, res));
  context.with(ctx, next);
}
