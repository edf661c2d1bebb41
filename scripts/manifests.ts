// Renders app.yaml with the real caBundle and the TLS Secret from a cert dir.
//   npm run -s manifests [-- --cert-dir certs] [--local-port 8443]   (-s: no npm banner in the YAML)
// --local-port: for a control plane on this machine (no pods): drop the Deployment and point the
// Service at localhost:<port> (ExternalName), which the aggregator resolves without kube-proxy.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { ensureDevCerts } from '../src/certs/devCerts.js';
import { startupFailure, step } from '../src/startup.js';

type Doc = { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: Record<string, unknown> } & Record<string, unknown>;

export function renderManifests(opts: { certDir: string; localPort?: number }): string {
  const appYaml = join(dirname(fileURLToPath(import.meta.url)), '..', 'app.yaml');
  const parsed = parseAllDocuments(readFileSync(appYaml, 'utf8'));
  const broken = parsed.flatMap((d) => d.errors)[0];
  if (broken) throw new Error(`${appYaml}: ${broken.message.split('\n')[0]}`);
  const docs = parsed.map((d) => d.toJSON() as Doc).filter(Boolean);
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
      out.push({
        apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls',
        metadata: { name: 'farm-apiserver-tls', namespace: 'farm-system' },
        data: {
          'tls.crt': readFileSync(join(opts.certDir, 'tls.crt')).toString('base64'),
          'tls.key': readFileSync(join(opts.certDir, 'tls.key')).toString('base64'),
        },
      });
    }
  }
  return out.map((d) => stringify(d)).join('---\n');
}

class UsageError extends Error {}

/** The command line: `--cert-dir <dir>` and `--local-port <port>`, also as `--flag=value`. */
function parseArgs(args: string[]): { certDir: string; localPort?: number } {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split(/=(.*)/s, 2);
    if (name !== '--cert-dir' && name !== '--local-port') throw new UsageError(`unknown argument ${JSON.stringify(args[i])}`);
    const value = inline ?? args[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  const port = values.get('--local-port');
  if (port !== undefined && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    throw new UsageError(`--local-port must be a port number (1-65535), got ${JSON.stringify(port)}`);
  }
  return { certDir: values.get('--cert-dir') ?? 'certs', localPort: port === undefined ? undefined : Number(port) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Every failure is one line on stderr (never a stack): 2 for a bad command line, 1 for the rest.
  try {
    const { certDir, localPort } = parseArgs(process.argv.slice(2));
    // A new user runs this before any `npm start`: make the same dev certificates it would.
    await step(`cannot prepare the certificates in --cert-dir ${certDir}`, () => ensureDevCerts(certDir));
    const out = await step('cannot render the manifests', () => renderManifests({ certDir, localPort }));
    process.stdout.write(out);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`manifests: ${e.message} (usage: npm run -s manifests [-- --cert-dir <dir>] [--local-port <port>])\n`);
      process.exit(2);
    }
    process.stderr.write(startupFailure(e, false).replace(/^farm-apiserver:/, 'manifests:'));
    process.exit(1);
  }
}
