// Renders app.yaml with the real caBundle and the TLS Secret from a cert dir; with --ha, the HA variant
// (app-ha.yaml over app.yaml: farm-apiserver replicas over an etcd StatefulSet, with the etcd Secrets).
//   npm run -s manifests [-- --cert-dir certs] [--local-port 8443]   (-s: no npm banner in the YAML)
//   npm run -s manifests -- --ha [--replicas 2] [--etcd-members 3]
// --local-port: for a control plane on this machine (no pods): drop the Deployment and point the
// Service at localhost:<port> (ExternalName), which the aggregator resolves without kube-proxy.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureDevCerts } from '../src/certs/devCerts.js';
import { ensureEtcdCerts, etcdMemberHosts, type EtcdLeaf, type EtcdTopology } from '../src/certs/etcdCerts.js';
import { startupFailure, step } from '../src/startup.js';

type Doc = { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: Record<string, unknown> } & Record<string, unknown>;

/** The HA variant's sizes: farm-apiserver replicas and etcd members. */
export interface HaOptions { replicas: number; etcdMembers: number }
export const HA_DEFAULTS: HaOptions = { replicas: 2, etcdMembers: 3 };
/** app-ha.yaml's etcd StatefulSet and headless Service: what the etcd certificates must name. */
export const HA_ETCD = { namespace: 'farm-system', name: 'etcd' } as const;
/** The Secrets the HA variant adds, each from a cert pair under <cert-dir>/etcd/ (with the etcd CA as ca.crt). */
const HA_SECRETS: Record<string, EtcdLeaf> = { 'etcd-server-tls': 'server', 'etcd-peer-tls': 'peer', 'farm-apiserver-etcd-client': 'client' };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export const haTopology = (ha: HaOptions): EtcdTopology => ({ ...HA_ETCD, members: ha.etcdMembers });

/** The documents of a YAML file; a template's `{{name}}` is replaced by `values[name]` (an unknown name is an error). */
function readDocs(file: string, values?: Record<string, string>): Doc[] {
  const raw = readFileSync(file, 'utf8');
  const text = values === undefined ? raw : raw.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`${file}: unknown template value {{${name}}}`);
    return values[name]!;
  });
  const parsed = parseAllDocuments(text);
  const broken = parsed.flatMap((d) => d.errors)[0];
  if (broken) throw new Error(`${file}: ${broken.message.split('\n')[0]}`);
  return parsed.map((d) => d.toJSON() as Doc).filter(Boolean);
}

function tlsSecret(name: string, files: { crt: string; key: string; ca?: string }): Doc {
  return {
    apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls',
    metadata: { name, namespace: 'farm-system' },
    data: {
      ...(files.ca !== undefined && { 'ca.crt': readFileSync(files.ca).toString('base64') }),
      'tls.crt': readFileSync(files.crt).toString('base64'),
      'tls.key': readFileSync(files.key).toString('base64'),
    },
  };
}

/** The YAML to apply. With `ha`, `<certDir>/etcd/` must hold the etcd certificates (ensureEtcdCerts). */
export function renderManifests(opts: { certDir: string; localPort?: number; ha?: HaOptions }): string {
  const docs = readDocs(join(ROOT, 'app.yaml'));
  const ca = readFileSync(join(opts.certDir, 'ca.crt'));
  const out: Doc[] = [];
  for (const doc of docs) {
    if (doc.kind === 'APIService') {
      const spec = { ...doc.spec, caBundle: ca.toString('base64') } as Record<string, unknown>;
      if (opts.localPort) spec.service = { ...(spec.service as object), port: opts.localPort };
      out.push({ ...doc, spec });
    } else if (doc.kind === 'Deployment' && opts.localPort) {
      continue;
    } else if (doc.kind === 'Service' && opts.localPort) {
      out.push({ ...doc, spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port: opts.localPort }] } });
    } else {
      out.push(doc);
    }
    if (doc.kind === 'Namespace' && !opts.localPort) {
      out.push(tlsSecret('farm-apiserver-tls', { crt: join(opts.certDir, 'tls.crt'), key: join(opts.certDir, 'tls.key') }));
    }
  }
  return (opts.ha ? withHa(out, opts.certDir, opts.ha) : out).map((d) => stringify(d)).join('---\n');
}

/**
 * app.yaml's documents with app-ha.yaml's over them: one naming the same object replaces it in place,
 * the rest follow; the etcd Secrets (from <cert-dir>/etcd/, see ensureEtcdCerts) follow farm-apiserver's.
 */
function withHa(base: Doc[], certDir: string, ha: HaOptions): Doc[] {
  const t = haTopology(ha);
  const hosts = etcdMemberHosts(t);
  const haDocs = readDocs(join(ROOT, 'app-ha.yaml'), {
    replicas: String(ha.replicas),
    etcdMembers: String(ha.etcdMembers),
    etcdQuorum: String(Math.floor(ha.etcdMembers / 2) + 1),
    etcdInitialCluster: hosts.map((h, i) => `${t.name}-${i}=https://${h}:2380`).join(','),
    etcdServers: hosts.map((h) => `https://${h}:2379`).join(','),
  });
  const id = (d: Doc) => `${d.kind}/${d.metadata?.namespace ?? ''}/${d.metadata?.name}`;
  const out = base.map((d) => haDocs.find((h) => id(h) === id(d)) ?? d);
  out.push(...haDocs.filter((h) => !base.some((d) => id(d) === id(h))));
  const etcdDir = join(certDir, 'etcd');
  const secrets = Object.entries(HA_SECRETS).map(([name, leaf]) =>
    tlsSecret(name, { ca: join(etcdDir, 'ca.crt'), crt: join(etcdDir, `${leaf}.crt`), key: join(etcdDir, `${leaf}.key`) }));
  const after = out.findIndex((d) => d.kind === 'Secret' && d.metadata?.name === 'farm-apiserver-tls');
  out.splice(after + 1, 0, ...secrets);
  return out;
}

class UsageError extends Error {}

interface Args { certDir: string; localPort?: number; ha?: HaOptions }

const VALUED = ['--cert-dir', '--local-port', '--replicas', '--etcd-members'];

/** An integer in [min, max] given as `flag`, or a usage error saying so. */
function count(flag: string, value: string | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(/^\d+$/.test(value) && Number(value) >= min && Number(value) <= max)) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** The command line: `--cert-dir <dir>`, `--local-port <port>`, `--ha[=true|false]`, `--replicas <n>`, `--etcd-members <n>`; also as `--flag=value`. */
function parseArgs(args: string[]): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split(/=(.*)/s, 2);
    if (name === '--ha') {
      if (inline !== undefined && inline !== 'true' && inline !== 'false') throw new UsageError(`--ha takes no value or =true|false, got ${JSON.stringify(inline)}`);
      values.set(name, inline ?? 'true');
      continue;
    }
    if (!VALUED.includes(name)) throw new UsageError(`unknown argument ${JSON.stringify(args[i])}`);
    const value = inline ?? args[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  const port = values.get('--local-port');
  if (port !== undefined && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    throw new UsageError(`--local-port must be a port number (1-65535), got ${JSON.stringify(port)}`);
  }
  const certDir = values.get('--cert-dir') ?? 'certs';
  const localPort = port === undefined ? undefined : Number(port);
  if (values.get('--ha') !== 'true') {
    const stray = ['--replicas', '--etcd-members'].find((f) => values.has(f));
    if (stray) throw new UsageError(`${stray} is only used with --ha`);
    return { certDir, localPort };
  }
  if (localPort !== undefined) throw new UsageError('--local-port and --ha do not go together (--local-port runs no pods)');
  return {
    certDir,
    ha: {
      // One replica is not HA, and its PodDisruptionBudget would have nothing to keep.
      replicas: count('--replicas', values.get('--replicas'), 2, 100, HA_DEFAULTS.replicas),
      // etcd advises at most 7 voting members; odd counts, as an even one adds no fault tolerance.
      etcdMembers: count('--etcd-members', values.get('--etcd-members'), 1, 9, HA_DEFAULTS.etcdMembers),
    },
  };
}

const USAGE = 'npm run -s manifests [-- --cert-dir <dir>] [--local-port <port> | --ha [--replicas <n>] [--etcd-members <n>]]';

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Every failure is one line on stderr (never a stack): 2 for a bad command line, 1 for the rest.
  try {
    const { certDir, localPort, ha } = parseArgs(process.argv.slice(2));
    // A new user runs this before any `npm start`: make the same dev certificates it would.
    await step(`cannot prepare the certificates in --cert-dir ${certDir}`, () => ensureDevCerts(certDir));
    if (ha) await step(`cannot prepare the etcd certificates in --cert-dir ${certDir}`, () => ensureEtcdCerts(certDir, haTopology(ha)));
    const out = await step('cannot render the manifests', () => renderManifests({ certDir, localPort, ha }));
    process.stdout.write(out);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`manifests: ${e.message} (usage: ${USAGE})\n`);
      process.exit(2);
    }
    process.stderr.write(startupFailure(e, false).replace(/^farm-apiserver:/, 'manifests:'));
    process.exit(1);
  }
}
