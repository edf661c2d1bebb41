// Configuration: CLI flags with FARM_* environment equivalents, validated with zod in one place.
// Precedence: flag > environment > default. Errors are ConfigError with a one-line message naming
// the flag (and the environment variable when the value came from there).

import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { parseGoDuration } from './apimachinery/duration.js';
import { MAX_BODY_BYTES } from './endpoints/bodies.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export { MAX_BODY_BYTES };

/** Service-account token path used to detect that we run inside a pod. */
export const IN_CLUSTER_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface Config {
  /** HTTPS listen port. */
  port: number;
  /** Listen address (an IP literal). */
  bindAddress: string;
  /** Directory for generated dev certificates, token and kubeconfig. */
  certDir: string;
  /** True: no upstream kube-apiserver (in-memory only). False: cluster mode. */
  standalone: boolean;
  /** KUBERNETES_SERVICE_HOST is set and the service-account token exists. */
  inCluster: boolean;
  logLevel: LogLevel;
  /** Explicit kubeconfig path for the upstream cluster (KUBECONFIG is never read implicitly). */
  kubeconfig?: string;
  /** Serving certificate (PEM). Defaults to <certDir>/tls.crt. */
  tlsCertFile: string;
  /** Serving key (PEM). Defaults to <certDir>/tls.key. */
  tlsKeyFile: string;
  /** True when --tls-cert-file/--tls-key-file were given: do not generate dev certs. */
  tlsFilesExplicit: boolean;
  /** Number of watch events kept for resuming a watch from a resourceVersion. */
  watchHistory: number;
  /** Per-watcher buffered events before a slow watcher is closed. */
  watchQueue: number;
  /** Interval between BOOKMARK events on watches that asked for them. */
  bookmarkIntervalSeconds: number;
  /** Fixed at MAX_BODY_BYTES. */
  maxBodyBytes: number;
  /** Grace period for in-flight requests on SIGTERM/SIGINT before connections are forced closed. */
  shutdownTimeoutSeconds: number;
  /** Where llamas are kept: in this process (lost on exit) or in etcd (shared by replicas). */
  storageBackend: StorageBackendName;
  /** Set exactly when storageBackend is etcd3. */
  etcd?: EtcdConfig;
  /** Server processes sharing the port (node:cluster); more than one needs etcd3 (one truth). */
  workers: number;
  /** audit.k8s.io/v1 Policy (YAML); without it no audit events are written. */
  auditPolicyFile?: string;
  /** Audit log file, or "-" for standard output. */
  auditLogPath?: string;
  /** Rotation as kube's flags: days to keep old files (0 = forever), old files kept (0 = all), megabytes before rotating (0 = 100). */
  auditLogMaxAge: number;
  auditLogMaxBackup: number;
  auditLogMaxSize: number;
  /** Only "json" (one audit.k8s.io/v1 Event per line). */
  auditLogFormat: 'json';
  /** Concurrent non-long-running read-only / mutating requests before 429 (0 = no limit). */
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** apiserver.config.k8s.io TracingConfiguration (endpoint, samplingRatePerMillion); without it nothing is traced. */
  tracingConfigFile?: string;
  /** --help was given: the caller prints usage() and exits 0. Other fields are then defaults. */
  help: boolean;
}

export const STORAGE_BACKENDS = ['memory', 'etcd3'] as const;
export type StorageBackendName = (typeof STORAGE_BACKENDS)[number];

/** Where and how the etcd3 backend connects (kube-apiserver's --etcd-* flags). */
export interface EtcdConfig {
  /** Client URLs, http:// or https://. */
  servers: string[];
  /** Keys live under <prefix>/farm.example.com/<resource>/. */
  prefix: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** 0 = this server never compacts etcd. */
  compactionIntervalMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Injectable for tests; defaults to the real filesystem. */
export interface ConfigProbes {
  fileExists?: (path: string) => boolean;
}

// ---------------------------------------------------------------------------------------------
// Option table: the single source for parsing, validation, usage() and the README.

type OptKey =
  | 'port' | 'bindAddress' | 'certDir' | 'standalone' | 'logLevel' | 'kubeconfig'
  | 'tlsCertFile' | 'tlsKeyFile' | 'watchHistory' | 'watchQueue' | 'bookmarkIntervalSeconds'
  | 'shutdownTimeoutSeconds' | 'storageBackend' | 'etcdServers' | 'etcdPrefix' | 'etcdCaFile'
  | 'etcdCertFile' | 'etcdKeyFile' | 'etcdCompactionInterval' | 'workers'
  | 'auditPolicyFile' | 'auditLogPath' | 'auditLogMaxAge' | 'auditLogMaxBackup' | 'auditLogMaxSize' | 'auditLogFormat'
  | 'maxRequestsInflight' | 'maxMutatingRequestsInflight' | 'tracingConfigFile';

interface OptSpec {
  key: OptKey;
  flag: string;
  env: string;
  /** Shown in usage(). */
  defaultText: string;
  /** Placeholder for the value in usage(). */
  metavar?: string;
  help: string;
  boolean?: boolean;
  /** One-line description of valid values, used in error messages. */
  expected: string;
  schema: z.ZodType<unknown, string>;
}

const intIn = (min: number, max: number) =>
  z.string().regex(/^[0-9]+$/).transform(Number).pipe(z.number().int().min(min).max(max));

const nonEmpty = z.string().trim().min(1);

/** http(s)://host:port, as etcd's client URLs are written (no path, query or credentials). */
function isEtcdUrl(s: string): boolean {
  if (!/^https?:\/\//.test(s)) return false;
  try {
    const u = new URL(s);
    return u.hostname !== '' && u.username === '' && u.password === '' && (u.pathname === '/' || u.pathname === '') && u.search === '' && u.hash === '';
  } catch {
    return false;
  }
}

const etcdServers = z.string().transform((s) => s.split(',').map((x) => x.trim()))
  .pipe(z.array(z.string().refine(isEtcdUrl)).min(1).max(32));

/** An absolute key prefix without a trailing or doubled slash, in printable ASCII (it is part of every key). */
const etcdPrefix = z.string().regex(/^(\/[\x21-\x2e\x30-\x7e]+)+$/);

/** A Go duration (kube's flag syntax): 0 turns it off, else at least a second. */
const compactionInterval = z.string().transform((s) => parseGoDuration(s) ?? -1)
  .pipe(z.number().refine((ms) => ms === 0 || (ms >= 1000 && ms <= 366 * 24 * 3600 * 1000)));

const boolText = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(['true', 'false', '1', '0']))
  .transform((s) => s === 'true' || s === '1');

export const OPTIONS: readonly OptSpec[] = [
  {
    key: 'port', flag: '--port', metavar: '<port>', env: 'FARM_PORT', defaultText: '8443',
    help: 'HTTPS listen port',
    expected: 'expected an integer between 1 and 65535', schema: intIn(1, 65535),
  },
  {
    key: 'bindAddress', flag: '--bind-address', metavar: '<ip>', env: 'FARM_BIND_ADDRESS',
    defaultText: '127.0.0.1 standalone, 0.0.0.0 in cluster mode',
    help: 'listen address',
    expected: 'expected an IPv4 or IPv6 address',
    schema: z.string().refine((s) => isIP(s) !== 0),
  },
  {
    key: 'certDir', flag: '--cert-dir', metavar: '<dir>', env: 'FARM_CERT_DIR', defaultText: './certs',
    help: 'directory for the generated dev CA, serving cert, token and kubeconfig',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'standalone', flag: '--standalone', env: 'FARM_STANDALONE', boolean: true,
    defaultText: 'true unless --kubeconfig is given or running in-cluster',
    help: 'serve without an upstream kube-apiserver (FarmPods unavailable)',
    expected: 'expected true or false', schema: boolText,
  },
  {
    key: 'logLevel', flag: '--log-level', metavar: '<level>', env: 'FARM_LOG_LEVEL', defaultText: 'info',
    help: `log level: ${LOG_LEVELS.join('|')}`,
    expected: `expected one of ${LOG_LEVELS.join(', ')}`, schema: z.enum(LOG_LEVELS),
  },
  {
    key: 'kubeconfig', flag: '--kubeconfig', metavar: '<path>', env: 'FARM_KUBECONFIG', defaultText: '(none)',
    help: 'kubeconfig of the upstream cluster (KUBECONFIG is not used implicitly)',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'tlsCertFile', flag: '--tls-cert-file', metavar: '<path>', env: 'FARM_TLS_CERT_FILE', defaultText: '<cert-dir>/tls.crt',
    help: 'serving certificate (PEM); reloaded when it changes',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'tlsKeyFile', flag: '--tls-key-file', metavar: '<path>', env: 'FARM_TLS_KEY_FILE', defaultText: '<cert-dir>/tls.key',
    help: 'serving private key (PEM); reloaded when it changes',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'watchHistory', flag: '--watch-history', metavar: '<n>', env: 'FARM_WATCH_HISTORY', defaultText: '10000',
    help: 'events kept for resuming watches (older resourceVersions get 410 Gone)',
    expected: 'expected an integer between 0 and 1000000', schema: intIn(0, 1_000_000),
  },
  {
    key: 'watchQueue', flag: '--watch-queue', metavar: '<n>', env: 'FARM_WATCH_QUEUE', defaultText: '1000',
    help: 'events buffered per watcher before a slow watcher is closed',
    expected: 'expected an integer between 1 and 1000000', schema: intIn(1, 1_000_000),
  },
  {
    key: 'bookmarkIntervalSeconds', flag: '--bookmark-interval-seconds', metavar: '<seconds>', env: 'FARM_BOOKMARK_INTERVAL_SECONDS',
    defaultText: '60', help: 'interval between BOOKMARK events (allowWatchBookmarks=true)',
    expected: 'expected an integer between 1 and 3600', schema: intIn(1, 3600),
  },
  {
    key: 'shutdownTimeoutSeconds', flag: '--shutdown-timeout-seconds', metavar: '<seconds>', env: 'FARM_SHUTDOWN_TIMEOUT_SECONDS',
    defaultText: '5', help: 'grace period for in-flight requests on SIGTERM/SIGINT',
    expected: 'expected an integer between 0 and 300', schema: intIn(0, 300),
  },
  {
    key: 'storageBackend', flag: '--storage-backend', metavar: '<name>', env: 'FARM_STORAGE_BACKEND', defaultText: 'memory',
    help: 'where llamas are stored: memory (this process only) or etcd3 (shared by replicas, kept across restarts)',
    expected: `expected one of ${STORAGE_BACKENDS.join(', ')}`, schema: z.enum(STORAGE_BACKENDS),
  },
  {
    key: 'etcdServers', flag: '--etcd-servers', metavar: '<urls>', env: 'FARM_ETCD_SERVERS', defaultText: '(none; required with etcd3)',
    help: 'comma-separated etcd client URLs (http:// or https://)',
    expected: 'expected comma-separated http:// or https:// URLs with a host (at most 32)', schema: etcdServers,
  },
  {
    key: 'etcdPrefix', flag: '--etcd-prefix', metavar: '<prefix>', env: 'FARM_ETCD_PREFIX', defaultText: '/registry',
    help: 'etcd key prefix; llamas live under <prefix>/farm.example.com/llamas/',
    expected: 'expected an absolute key path such as /registry (no trailing or doubled /, printable ASCII)', schema: etcdPrefix,
  },
  {
    key: 'etcdCaFile', flag: '--etcd-cafile', metavar: '<path>', env: 'FARM_ETCD_CAFILE', defaultText: '(system roots)',
    help: 'CA bundle (PEM) that verifies the etcd servers',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'etcdCertFile', flag: '--etcd-certfile', metavar: '<path>', env: 'FARM_ETCD_CERTFILE', defaultText: '(none)',
    help: 'client certificate (PEM) for etcd',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'etcdKeyFile', flag: '--etcd-keyfile', metavar: '<path>', env: 'FARM_ETCD_KEYFILE', defaultText: '(none)',
    help: 'client private key (PEM) for etcd',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'etcdCompactionInterval', flag: '--etcd-compaction-interval', metavar: '<duration>', env: 'FARM_ETCD_COMPACTION_INTERVAL', defaultText: '5m',
    help: 'how often one replica compacts etcd history (Go duration; 0 = never)',
    expected: 'expected a Go duration of at least 1s (e.g. 5m, 1h30m) or 0', schema: compactionInterval,
  },
  {
    key: 'workers', flag: '--workers', metavar: '<n>', env: 'FARM_WORKERS', defaultText: '1',
    help: 'server processes sharing the port, one per core to use (more than 1 needs --storage-backend=etcd3)',
    expected: 'expected an integer between 1 and 64', schema: intIn(1, 64),
  },
  {
    key: 'auditPolicyFile', flag: '--audit-policy-file', metavar: '<path>', env: 'FARM_AUDIT_POLICY_FILE', defaultText: '(none: no audit events)',
    help: 'audit.k8s.io/v1 Policy (YAML) deciding what is audited at which level',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
  {
    key: 'auditLogPath', flag: '--audit-log-path', metavar: '<path>', env: 'FARM_AUDIT_LOG_PATH', defaultText: '(none)',
    help: "audit log (audit.k8s.io/v1 Event JSON lines); '-' means standard output",
    expected: "expected a non-empty path or '-'", schema: nonEmpty,
  },
  {
    key: 'auditLogMaxAge', flag: '--audit-log-maxage', metavar: '<days>', env: 'FARM_AUDIT_LOG_MAXAGE', defaultText: '0 (keep)',
    help: 'days to keep rotated audit logs, by the time in their names',
    expected: 'expected an integer between 0 and 100000', schema: intIn(0, 100_000),
  },
  {
    key: 'auditLogMaxBackup', flag: '--audit-log-maxbackup', metavar: '<n>', env: 'FARM_AUDIT_LOG_MAXBACKUP', defaultText: '0 (all)',
    help: 'rotated audit logs to keep',
    expected: 'expected an integer between 0 and 100000', schema: intIn(0, 100_000),
  },
  {
    key: 'auditLogMaxSize', flag: '--audit-log-maxsize', metavar: '<MB>', env: 'FARM_AUDIT_LOG_MAXSIZE', defaultText: '0 (100 MB)',
    help: 'megabytes an audit log grows to before it is rotated',
    expected: 'expected an integer between 0 and 1000000', schema: intIn(0, 1_000_000),
  },
  {
    key: 'auditLogFormat', flag: '--audit-log-format', metavar: '<format>', env: 'FARM_AUDIT_LOG_FORMAT', defaultText: 'json',
    help: 'audit log format: json (kube\'s "legacy" text format is not supported)',
    expected: 'expected json', schema: z.literal('json'),
  },
  {
    key: 'maxRequestsInflight', flag: '--max-requests-inflight', metavar: '<n>', env: 'FARM_MAX_REQUESTS_INFLIGHT', defaultText: '400',
    help: 'concurrent read-only requests (watches excepted) before 429 Too Many Requests; 0 = no limit',
    expected: 'expected an integer between 0 and 1000000', schema: intIn(0, 1_000_000),
  },
  {
    key: 'maxMutatingRequestsInflight', flag: '--max-mutating-requests-inflight', metavar: '<n>', env: 'FARM_MAX_MUTATING_REQUESTS_INFLIGHT', defaultText: '200',
    help: 'concurrent mutating requests before 429 Too Many Requests; 0 = no limit',
    expected: 'expected an integer between 0 and 1000000', schema: intIn(0, 1_000_000),
  },
  {
    key: 'tracingConfigFile', flag: '--tracing-config-file', metavar: '<path>', env: 'FARM_TRACING_CONFIG_FILE', defaultText: '(none: no tracing)',
    help: 'apiserver.config.k8s.io TracingConfiguration (YAML): OTLP/gRPC endpoint and samplingRatePerMillion',
    expected: 'expected a non-empty path', schema: nonEmpty,
  },
];

const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

/** The whole-config schema: the final check that everything has the right type and range. */
const ConfigSchema = z.object({
  port: z.number().int().min(1).max(65535),
  bindAddress: z.string().refine((s) => isIP(s) !== 0),
  certDir: z.string().min(1),
  standalone: z.boolean(),
  inCluster: z.boolean(),
  logLevel: z.enum(LOG_LEVELS),
  kubeconfig: z.string().min(1).optional(),
  tlsCertFile: z.string().min(1),
  tlsKeyFile: z.string().min(1),
  tlsFilesExplicit: z.boolean(),
  watchHistory: z.number().int().min(0),
  watchQueue: z.number().int().min(1),
  bookmarkIntervalSeconds: z.number().int().min(1),
  maxBodyBytes: z.literal(MAX_BODY_BYTES),
  shutdownTimeoutSeconds: z.number().int().min(0),
  storageBackend: z.enum(STORAGE_BACKENDS),
  workers: z.number().int().min(1).max(64),
  auditPolicyFile: z.string().min(1).optional(),
  auditLogPath: z.string().min(1).optional(),
  auditLogMaxAge: z.number().int().min(0),
  auditLogMaxBackup: z.number().int().min(0),
  auditLogMaxSize: z.number().int().min(0),
  auditLogFormat: z.literal('json'),
  maxRequestsInflight: z.number().int().min(0),
  maxMutatingRequestsInflight: z.number().int().min(0),
  tracingConfigFile: z.string().min(1).optional(),
  etcd: z.object({
    servers: z.array(z.string()).min(1),
    prefix: z.string().min(2),
    caFile: z.string().min(1).optional(),
    certFile: z.string().min(1).optional(),
    keyFile: z.string().min(1).optional(),
    compactionIntervalMs: z.number().min(0),
  }).optional(),
  help: z.boolean(),
});

export function usage(): string {
  const lines = [
    'Usage: farm-apiserver [flags]',
    '',
    'Kubernetes aggregated API server for farm.example.com (Llamas, FarmPods).',
    'Every flag also reads an environment variable; precedence is flag > environment > default.',
    '',
    'Flags:',
  ];
  const left = OPTIONS.map((o) => (o.boolean ? `${o.flag}[=true|false]` : `${o.flag} ${o.metavar ?? '<value>'}`));
  const width = Math.max(...left.map((l) => l.length), '-h, --help'.length) + 2;
  OPTIONS.forEach((o, i) => {
    lines.push(`  ${left[i]!.padEnd(width)}${o.help}`);
    lines.push(`  ${''.padEnd(width)}env ${o.env}; default ${o.defaultText}`);
  });
  lines.push(`  ${'-h, --help'.padEnd(width)}print this help and exit`);
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------

interface Raw {
  value: string;
  source: 'flag' | 'env';
}

function oneLine(s: string): string {
  const flat = s.replace(/[\r\n\t]+/g, ' ');
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function invalid(spec: OptSpec, raw: Raw, why: string): ConfigError {
  const where = raw.source === 'env' ? `${spec.env} (${spec.flag})` : spec.flag;
  return new ConfigError(`invalid ${where} ${JSON.stringify(oneLine(raw.value))}: ${why}`);
}

function parseArgv(argv: string[]): { flags: Map<OptKey, Raw>; help: boolean } {
  const flags = new Map<OptKey, Raw>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    if (arg === '--') {
      if (i + 1 < argv.length) {
        throw new ConfigError(`unexpected argument ${JSON.stringify(oneLine(argv[i + 1]!))}: farm-apiserver takes no positional arguments`);
      }
      break;
    }
    if (!arg.startsWith('--')) {
      if (arg.startsWith('-') && arg.length > 1) {
        throw new ConfigError(`unknown flag ${JSON.stringify(oneLine(arg))}: flags are spelled --name (see --help)`);
      }
      throw new ConfigError(`unexpected argument ${JSON.stringify(oneLine(arg))}: farm-apiserver takes no positional arguments`);
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    const spec = BY_FLAG.get(name);
    if (!spec) {
      throw new ConfigError(`unknown flag ${oneLine(name)} (see --help)`);
    }
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else if (spec.boolean) {
      value = 'true'; // pflag semantics: a bare boolean flag never consumes the next argument
    } else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2)) {
        throw new ConfigError(`missing value for ${spec.flag}: ${spec.expected}`);
      }
      value = next;
      i++;
    }
    flags.set(spec.key, { value, source: 'flag' });
  }
  return { flags, help };
}

function defaultsFor(standalone: boolean, inCluster: boolean, certDir = './certs'): Config {
  return {
    port: 8443,
    bindAddress: standalone ? '127.0.0.1' : '0.0.0.0',
    certDir,
    standalone,
    inCluster,
    logLevel: 'info',
    tlsCertFile: join(certDir, 'tls.crt'),
    tlsKeyFile: join(certDir, 'tls.key'),
    tlsFilesExplicit: false,
    watchHistory: 10000,
    watchQueue: 1000,
    bookmarkIntervalSeconds: 60,
    maxBodyBytes: MAX_BODY_BYTES,
    shutdownTimeoutSeconds: 5,
    storageBackend: 'memory',
    workers: 1,
    auditLogMaxAge: 0,
    auditLogMaxBackup: 0,
    auditLogMaxSize: 0,
    auditLogFormat: 'json',
    maxRequestsInflight: 400,
    maxMutatingRequestsInflight: 200,
    help: false,
  };
}

const ETCD_KEYS = ['etcdServers', 'etcdPrefix', 'etcdCaFile', 'etcdCertFile', 'etcdKeyFile', 'etcdCompactionInterval'] as const;

/** The --etcd-* flags belong to the etcd3 backend: given with memory they would be silently ignored, so they are an error. */
function etcdConfig(backend: StorageBackendName, values: Partial<Record<OptKey, unknown>>, given: Partial<Record<OptKey, Raw>>): EtcdConfig | undefined {
  const spec = (key: OptKey) => OPTIONS.find((o) => o.key === key)!;
  if (backend === 'memory') {
    const stray = ETCD_KEYS.find((k) => given[k]);
    if (stray) throw invalid(spec(stray), given[stray]!, 'only used with --storage-backend=etcd3 (FARM_STORAGE_BACKEND)');
    return undefined;
  }
  const servers = values.etcdServers as string[] | undefined;
  if (!servers) {
    throw new ConfigError('--storage-backend=etcd3 needs --etcd-servers (FARM_ETCD_SERVERS), e.g. https://etcd-0.etcd:2379');
  }
  if (given.etcdCertFile && !given.etcdKeyFile) throw invalid(spec('etcdCertFile'), given.etcdCertFile, '--etcd-keyfile (FARM_ETCD_KEYFILE) must be given too');
  if (given.etcdKeyFile && !given.etcdCertFile) throw invalid(spec('etcdKeyFile'), given.etcdKeyFile, '--etcd-certfile (FARM_ETCD_CERTFILE) must be given too');
  const tlsGiven = (['etcdCaFile', 'etcdCertFile'] as const).find((k) => given[k]);
  const plain = servers.find((u) => u.startsWith('http://'));
  if (tlsGiven && plain) throw invalid(spec(tlsGiven), given[tlsGiven]!, `TLS files need https:// etcd servers, not ${plain}`);
  if (plain && servers.some((u) => u.startsWith('https://'))) {
    throw invalid(spec('etcdServers'), given.etcdServers!, 'mixes http:// and https:// servers');
  }
  return {
    servers,
    prefix: (values.etcdPrefix as string | undefined) ?? '/registry',
    ...(values.etcdCaFile !== undefined && { caFile: values.etcdCaFile as string }),
    ...(values.etcdCertFile !== undefined && { certFile: values.etcdCertFile as string, keyFile: values.etcdKeyFile as string }),
    compactionIntervalMs: (values.etcdCompactionInterval as number | undefined) ?? 5 * 60 * 1000,
  };
}

/**
 * Build the configuration from argv (without the node/script prefix, i.e. process.argv.slice(2))
 * and the environment. Throws ConfigError with a one-line message on any bad input.
 */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv, probes: ConfigProbes = {}): Config {
  const fileExists = probes.fileExists ?? existsSync;
  const { flags, help } = parseArgv(argv);
  const inCluster = Boolean(env.KUBERNETES_SERVICE_HOST) && fileExists(IN_CLUSTER_TOKEN_PATH);

  if (help) {
    return { ...defaultsFor(!inCluster, inCluster), help: true };
  }

  // Resolve each option: flag > env > (absent). Empty env vars count as unset.
  const values: Partial<Record<OptKey, unknown>> = {};
  const given: Partial<Record<OptKey, Raw>> = {};
  for (const spec of OPTIONS) {
    let raw = flags.get(spec.key);
    if (!raw) {
      const e = env[spec.env];
      if (e !== undefined && e !== '') raw = { value: e, source: 'env' };
    }
    if (!raw) continue;
    const parsed = spec.schema.safeParse(raw.value);
    if (!parsed.success) throw invalid(spec, raw, spec.expected);
    values[spec.key] = parsed.data;
    given[spec.key] = raw;
  }

  const kubeconfig = values.kubeconfig as string | undefined;
  const standalone = (values.standalone as boolean | undefined) ?? (kubeconfig === undefined && !inCluster);
  if (!standalone && kubeconfig === undefined && !inCluster) {
    const spec = BY_FLAG.get('--standalone')!;
    throw invalid(spec, given.standalone!,
      'cluster mode needs --kubeconfig (FARM_KUBECONFIG) or an in-cluster service account');
  }

  const certDir = (values.certDir as string | undefined) ?? './certs';
  const base = defaultsFor(standalone, inCluster, certDir);

  const certGiven = given.tlsCertFile;
  const keyGiven = given.tlsKeyFile;
  if (certGiven && !keyGiven) {
    throw invalid(BY_FLAG.get('--tls-cert-file')!, certGiven, '--tls-key-file (FARM_TLS_KEY_FILE) must be given too');
  }
  if (keyGiven && !certGiven) {
    throw invalid(BY_FLAG.get('--tls-key-file')!, keyGiven, '--tls-cert-file (FARM_TLS_CERT_FILE) must be given too');
  }

  const storageBackend = (values.storageBackend as StorageBackendName | undefined) ?? 'memory';
  const etcd = etcdConfig(storageBackend, values, given);
  if (given.workers && (values.workers as number) > 1 && storageBackend !== 'etcd3') {
    throw invalid(BY_FLAG.get('--workers')!, given.workers,
      'more than one worker needs --storage-backend=etcd3 (with memory, each process would hold different llamas)');
  }
  // Each worker would rotate the same file on its own; standard output is shared safely.
  if (given.workers && (values.workers as number) > 1 && given.auditLogPath && values.auditLogPath !== '-') {
    throw invalid(BY_FLAG.get('--audit-log-path')!, given.auditLogPath, "more than one worker needs --audit-log-path=- (each process would rotate the file on its own)");
  }
  // The --etcd-* values live in `etcd`, not as top-level fields.
  const rest = Object.fromEntries(Object.entries(values).filter(([k]) => !(ETCD_KEYS as readonly string[]).includes(k)));
  const merged = {
    ...base,
    ...(rest as Partial<Config>),
    standalone,
    certDir,
    tlsFilesExplicit: Boolean(certGiven && keyGiven),
    storageBackend,
    ...(etcd && { etcd }),
  };
  if (kubeconfig === undefined) delete merged.kubeconfig;

  const checked = ConfigSchema.safeParse(merged);
  if (!checked.success) {
    // Unreachable unless the option table and the schema disagree; still keep it one line.
    const issue = checked.error.issues[0];
    throw new ConfigError(`invalid configuration ${issue?.path.join('.') ?? ''}: ${oneLine(issue?.message ?? 'unknown error')}`);
  }
  return checked.data as Config;
}
