// --tracing-config-file: kube's TracingConfiguration (apiserver.config.k8s.io v1alpha1/v1beta1/v1),
// read and validated as k8s.io/apiserver pkg/server/options/tracing.go ReadTracingConfiguration and
// component-base tracing/api/v1 ValidateTracingConfiguration do: strict decoding (unknown or
// duplicate fields are errors), a sampling rate in [0, 1000000], a gRPC endpoint (dns or unix).
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';

export const TRACING_GROUP = 'apiserver.config.k8s.io';
const VERSIONS = ['v1alpha1', 'v1beta1', 'v1'];
/** otlptracegrpc's default endpoint, used by kube when `endpoint` is unset. */
export const DEFAULT_ENDPOINT = 'localhost:4317';
const MAX_SAMPLING_RATE_PER_MILLION = 1_000_000;

export class TracingConfigError extends Error {}

export interface TracingConfiguration {
  /** As written (host:port, dns://[authority]/host:port or unix:///path). */
  endpoint: string;
  /** Unset: only requests whose parent is sampled are traced (ParentBased(NeverSample)). */
  samplingRatePerMillion?: number;
}

const int32 = z.number().int().min(-(2 ** 31)).max(2 ** 31 - 1);
const FileSchema = z.strictObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  endpoint: z.string().nullish(),
  samplingRatePerMillion: int32.nullish(),
});

/** The gRPC target to dial, from an endpoint kube's validateEndpoint accepted. */
export type GrpcTarget = { kind: 'dns'; hostPort: string } | { kind: 'unix'; url: string };

/** validateEndpoint: no "//" means dns://; only the dns and unix schemes are dialled here. */
export function grpcTarget(endpoint: string): GrpcTarget {
  const withScheme = endpoint.includes('//') ? endpoint : `dns://${endpoint}`;
  const invalid = (why: string) => new TracingConfigError(`failed to validate tracing configuration: endpoint: Invalid value: ${JSON.stringify(withScheme)}: ${why}`);
  let url: URL;
  try { url = new URL(withScheme); } catch { throw invalid('not a valid URL'); }
  switch (url.protocol) {
    case 'dns:': {
      // dns:[//authority/]host[:port]: the authority names a DNS server, which Node's resolver cannot use.
      const hostPort = url.host && url.pathname.length <= 1 ? url.host : url.pathname.replace(/^\//, '');
      if (!hostPort) throw invalid('no host to connect to');
      return { kind: 'dns', hostPort };
    }
    case 'unix:': return { kind: 'unix', url: withScheme };
    case 'unix-abstract:': throw invalid('unix-abstract sockets are not supported by this server; use a dns or unix endpoint');
    default:
      throw invalid(`unsupported scheme: ${url.protocol.slice(0, -1)}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md`);
  }
}

/** Decodes and validates the file's text; `path` only names it in messages. */
export function parseTracingConfiguration(text: string, path: string): TracingConfiguration {
  let doc: unknown;
  try {
    doc = text.trim() === '' ? {} : parse(text, { uniqueKeys: true, prettyErrors: false });
  } catch (e) {
    throw new TracingConfigError(`unable to decode tracing configuration data: strict decoding error: ${(e as Error).message.split('\n')[0]}`);
  }
  doc ??= {};
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new TracingConfigError(`unable to decode tracing configuration data: ${path} does not hold an object`);
  }
  const empty = Object.keys(doc).length === 0;
  const parsed = FileSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue.code === 'unrecognized_keys' ? `unknown field ${JSON.stringify(issue.keys[0])}` : `${issue.path.join('.')}: ${issue.message}`;
    throw new TracingConfigError(`unable to decode tracing configuration data: strict decoding error: ${field}`);
  }
  const cfg = parsed.data;
  if (!empty) {
    if (!cfg.apiVersion) throw new TracingConfigError(`unable to decode tracing configuration data: Object 'apiVersion' is missing in ${path}`);
    if (!cfg.kind) throw new TracingConfigError(`unable to decode tracing configuration data: Object 'Kind' is missing in ${path}`);
    const [group, version] = cfg.apiVersion.split('/');
    if (group !== TRACING_GROUP || !VERSIONS.includes(version ?? '') || cfg.kind !== 'TracingConfiguration') {
      throw new TracingConfigError(`unable to decode tracing configuration data: no kind ${JSON.stringify(cfg.kind)} is registered for version ${JSON.stringify(cfg.apiVersion)}; expected kind TracingConfiguration in ${VERSIONS.map((v) => `${TRACING_GROUP}/${v}`).join(', ')}`);
    }
  }
  const rate = cfg.samplingRatePerMillion ?? undefined;
  if (rate !== undefined && rate < 0) {
    throw new TracingConfigError(`failed to validate tracing configuration: samplingRatePerMillion: Invalid value: ${rate}: sampling rate must be positive`);
  }
  if (rate !== undefined && rate > MAX_SAMPLING_RATE_PER_MILLION) {
    throw new TracingConfigError(`failed to validate tracing configuration: samplingRatePerMillion: Invalid value: ${rate}: sampling rate per million must be less than or equal to one million`);
  }
  const endpoint = cfg.endpoint ?? DEFAULT_ENDPOINT;
  grpcTarget(endpoint);
  return { endpoint, ...(rate !== undefined && { samplingRatePerMillion: rate }) };
}

export async function readTracingConfiguration(path: string): Promise<TracingConfiguration> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file or directory' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    throw new TracingConfigError(`unable to read tracing configuration from ${JSON.stringify(path)}: open ${path}: ${why}`);
  }
  return parseTracingConfiguration(text, path);
}
