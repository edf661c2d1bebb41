// The OpenTelemetry SDK behind --tracing-config-file, set up as component-base tracing.NewProvider:
// OTLP/gRPC without TLS to the configured endpoint, a batch span processor, and
// ParentBased(TraceIDRatioBased(rate / 1e6)) sampling (ParentBased(NeverSample) when the rate is
// unset or 0). Loaded only when tracing is configured, so a server without it loads none of this.
import { randomUUID } from 'node:crypto';
import { context, diag, DiagLogLevel, propagation, trace, type DiagLogger } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import { credentials } from '@grpc/grpc-js';
import type { FastifyBaseLogger } from 'fastify';
import { grpcTarget, type TracingConfiguration } from './tracingConfig.js';
import { enterServerSpan, tracedHandler } from './tracingRequests.js';
import type { Tracing } from './tracing.js';

const SERVICE_NAME = 'farm-apiserver';

/** The SDK's own complaints (an unreachable collector, dropped spans) go to the server log. */
function diagLogger(log: FastifyBaseLogger): DiagLogger {
  const to = (level: 'warn' | 'error' | 'debug') => (message: string, ...args: unknown[]) =>
    log[level]({ component: 'tracing', args: args.map(String) }, message);
  return { error: to('error'), warn: to('warn'), info: to('debug'), debug: to('debug'), verbose: to('debug') };
}

export function startSdk(config: TracingConfiguration, log: FastifyBaseLogger): Tracing {
  const target = grpcTarget(config.endpoint);
  const exporter = new OTLPTraceExporter({
    url: target.kind === 'dns' ? `http://${target.hostPort}` : target.url,
    // TracingConfiguration: "The connection is insecure, and does not currently support TLS."
    credentials: credentials.createInsecure(),
  });
  const rate = config.samplingRatePerMillion ?? 0;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': SERVICE_NAME, 'service.instance.id': `${SERVICE_NAME}-${randomUUID()}` }),
    sampler: new ParentBasedSampler({ root: rate > 0 ? new TraceIdRatioBasedSampler(rate / 1_000_000) : new AlwaysOffSampler() }),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  // Globals of @opentelemetry/api: what lower layers reach without importing the server.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(contextManager) || !trace.setGlobalTracerProvider(provider)) {
    context.disable();
    throw new Error('tracing is already set up in this process');
  }
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  diag.setLogger(diagLogger(log), DiagLogLevel.WARN);
  const tracer = provider.getTracer(SERVICE_NAME);
  let stopped: Promise<void> | undefined;
  return {
    config,
    wrap: (handler) => tracedHandler(handler),
    enter: (req, res, info, groups, next) => enterServerSpan(tracer, req, res, info, groups, next),
    flush: () => provider.forceFlush(),
    shutdown: () => stopped ??= provider.shutdown().finally(() => {
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
    }),
  };
}
