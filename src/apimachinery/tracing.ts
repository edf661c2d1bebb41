// Child spans for the layers below the server (storage calls, upstream requests, serialization), on
// @opentelemetry/api alone, as component-base's tracing.Start: a span is made only when the request
// already has a recording one. With tracing off no SDK is registered, the active span is always
// undefined and each helper costs one context look-up.
import { context, createContextKey, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

const SCOPE = 'farm-apiserver';

/**
 * Epoch milliseconds with the monotonic clock's fraction. The SDK anchors each span it times itself
 * to Date.now()'s whole milliseconds, so a child could start before its parent by up to 1 ms; spans
 * timed with this one clock nest exactly.
 */
export const spanClock = (): number => performance.timeOrigin + performance.now();

/** Work timed before the request's span exists (authentication decides its parent), replayed under it. */
export interface EarlySpan { name: string; attributes: Attributes; start: number; end: number; error?: unknown }

const EARLY = createContextKey('farm-apiserver early spans');

/** A context in which inSpan only times its work into `into`, for replaySpans once the parent exists. */
export const collectingEarlySpans = (parent: Context, into: EarlySpan[]): Context => parent.setValue(EARLY, into);

/** The early spans as children of `parent` (recorded by the caller), with the times they were taken at. */
export function replaySpans(parent: Span, spans: EarlySpan[]): void {
  const ctx = trace.setSpan(context.active(), parent);
  const tracer = trace.getTracer(SCOPE);
  for (const s of spans) {
    const span = tracer.startSpan(s.name, { attributes: s.attributes, startTime: s.start }, ctx);
    if (s.error !== undefined) span.recordException(s.error instanceof Error ? s.error : String(s.error));
    span.end(s.end);
  }
}

/**
 * Runs `fn` inside a child span named `name` (attributes made only when it is recorded). A thrown
 * error is recorded as an exception event and rethrown; the span's status is left to the caller's
 * meaning (a NotFound from storage is an answer, not a failure).
 */
export function inSpan<T>(name: string, attributes: () => Attributes, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  // Not async itself: an untraced call adds no promise of its own. One context look-up serves both
  // questions: is there a recording span, and is this work timed for a span still to come.
  const active = context.active();
  if (trace.getSpan(active)?.isRecording()) return traced(name, attributes(), fn);
  const early = active.getValue(EARLY) as EarlySpan[] | undefined;
  return early ? timed(early, name, attributes(), fn) : fn(undefined);
}

async function timed<T>(into: EarlySpan[], name: string, attributes: Attributes, fn: (span: undefined) => Promise<T>): Promise<T> {
  const span: EarlySpan = { name, attributes, start: spanClock(), end: 0 };
  try {
    return await fn(undefined);
  } catch (e) {
    span.error = e;
    throw e;
  } finally {
    span.end = spanClock();
    into.push(span);
  }
}

async function traced<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = trace.getTracer(SCOPE).startSpan(name, { attributes, startTime: spanClock() });
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
  } catch (e) {
    span.recordException(e instanceof Error ? e : String(e));
    throw e;
  } finally {
    span.end(spanClock());
  }
}

/** An outgoing HTTP call: the headers to add (traceparent, tracestate) and how to close its span. */
export interface OutgoingCall {
  headers: Record<string, string>;
  /** The response's status, or the error that ended the call. */
  done(status: number | undefined, error?: Error): void;
}

/**
 * A client span for an HTTP request to `url` (otelhttp's transport: "HTTP <method>"), with the W3C
 * headers to send so the callee joins the trace. An unsampled request still propagates its context
 * (sampled=0), as otelhttp does; without any request context there is nothing to send.
 */
export function outgoingCall(method: string, url: URL): OutgoingCall | undefined {
  const active = trace.getActiveSpan();
  if (!active) return undefined;
  const headers: Record<string, string> = {};
  if (!active.isRecording()) {
    propagation.inject(context.active(), headers);
    return { headers, done: () => {} };
  }
  const span = trace.getTracer(SCOPE).startSpan(`HTTP ${method}`, {
    kind: SpanKind.CLIENT,
    startTime: spanClock(),
    attributes: {
      'http.method': method,
      'http.url': `${url.origin}${url.pathname}`,
      'net.peer.name': url.hostname,
      'net.peer.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    },
  });
  propagation.inject(trace.setSpan(context.active(), span), headers);
  return {
    headers,
    done(status, error) {
      if (status !== undefined) span.setAttribute('http.status_code', status);
      if (error) span.recordException(error);
      // otelhttp's client rule: an error or a 4xx/5xx answer is an error of the call.
      if (error || (status !== undefined && status >= 400)) span.setStatus({ code: SpanStatusCode.ERROR, message: error?.message });
      span.end(spanClock());
    },
  };
}
