// Tracing (--tracing-config-file): off unless configured. Off, nothing of the OpenTelemetry SDK is
// loaded and no request does any tracing work: lower layers ask @opentelemetry/api for an active
// span and find none (src/apimachinery/tracing.ts).
import type { FastifyBaseLogger } from 'fastify';
import { readTracingConfiguration, type TracingConfiguration } from './tracingConfig.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestInfo } from '../../apimachinery/types.js';
import type { RequestHandler } from './tracingRequests.js';

export interface Tracing {
  config: TracingConfiguration;
  /** The HTTP server's handler, each request timed from its arrival. */
  wrap(handler: RequestHandler): RequestHandler;
  /** Once authenticated: runs the rest of the request inside its server span (parented by trust in `groups`). */
  enter(req: IncomingMessage, res: ServerResponse, info: RequestInfo, groups: readonly string[], next: () => void): void;
  /** Exports every span ended so far. */
  flush(): Promise<void>;
  /** Exports what is left, then unregisters the process-wide tracer provider, context manager and propagator. */
  shutdown(): Promise<void>;
}

/** Reads and validates the file (TracingConfigError names what is wrong), then starts the SDK. */
export async function startTracing(configFile: string, log: FastifyBaseLogger): Promise<Tracing> {
  const config = await readTracingConfiguration(configFile);
  const { startSdk } = await import('./tracingSdk.js');
  const tracing = startSdk(config, log);
  log.info({ endpoint: config.endpoint, samplingRatePerMillion: config.samplingRatePerMillion ?? 0 }, 'tracing: exporting spans over OTLP/gRPC');
  return tracing;
}
