// Command line and environment of the controller: flag, then environment, then default.
import { parseArgs } from 'node:util';
import { isLevel, type Level } from './log.js';

export interface Options {
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  /** A kubeconfig file; otherwise KubeConfig.loadFromDefault (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig?: string;
  /** Use the pod's ServiceAccount (KubeConfig.loadFromCluster), e.g. under mirrord, even if ~/.kube/config exists. */
  inCluster: boolean;
  workers: number;
  logLevel: Level;
  requestTimeoutMs: number;
  /** How long a SIGTERM/SIGINT waits for the running reconciles and pending events. */
  shutdownTimeoutMs: number;
}

export const USAGE = `Usage: npx tsx examples/llama-controller/main.ts [flags]
  --namespace <ns>          LLAMA_CONTROLLER_NAMESPACE   watch one namespace (default: all)
  --kubeconfig <path>       LLAMA_CONTROLLER_KUBECONFIG  kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)
  --in-cluster              LLAMA_CONTROLLER_IN_CLUSTER  use the pod's ServiceAccount (in a pod, or under mirrord)
  --workers <n>             LLAMA_CONTROLLER_WORKERS     llamas reconciled at once (default 2)
  --log-level <level>       LLAMA_CONTROLLER_LOG_LEVEL   debug|info|warn|error (default info)
  --request-timeout <s>     LLAMA_CONTROLLER_REQUEST_TIMEOUT  seconds per API request (default 30)
  --shutdown-timeout <s>    LLAMA_CONTROLLER_SHUTDOWN_TIMEOUT seconds to drain on SIGTERM (default 10)
`;

function positiveInt(flag: string, v: string, max: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${flag}: want a whole number from 1 to ${max}, got ${JSON.stringify(v)}`);
  return n;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      namespace: { type: 'string' }, kubeconfig: { type: 'string' }, 'in-cluster': { type: 'boolean' }, workers: { type: 'string' },
      'log-level': { type: 'string' }, 'request-timeout': { type: 'string' }, 'shutdown-timeout': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const pick = (flag: keyof typeof values, name: string) => {
    const v = values[flag] ?? env[`LLAMA_CONTROLLER_${name}`];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const inCluster = values['in-cluster'] ?? ['1', 'true'].includes(env.LLAMA_CONTROLLER_IN_CLUSTER ?? '');
  const kubeconfig = pick('kubeconfig', 'KUBECONFIG');
  if (inCluster && kubeconfig) throw new Error('--in-cluster and --kubeconfig exclude each other');
  const logLevel = pick('log-level', 'LOG_LEVEL') ?? 'info';
  if (!isLevel(logLevel)) throw new Error(`--log-level: want debug, info, warn or error, got ${JSON.stringify(logLevel)}`);
  return {
    namespace: pick('namespace', 'NAMESPACE'),
    kubeconfig,
    inCluster,
    workers: positiveInt('--workers', pick('workers', 'WORKERS') ?? '2', 64),
    logLevel,
    requestTimeoutMs: positiveInt('--request-timeout', pick('request-timeout', 'REQUEST_TIMEOUT') ?? '30', 3600) * 1000,
    shutdownTimeoutMs: positiveInt('--shutdown-timeout', pick('shutdown-timeout', 'SHUTDOWN_TIMEOUT') ?? '10', 3600) * 1000,
  };
}
