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
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const docs = parseAllDocuments(readFileSync(join(root, 'app.yaml'), 'utf8')).map((d) => d.toJSON() as Doc).filter(Boolean);
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const flag = (name: string) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
  const port = flag('--local-port');
  const certDir = flag('--cert-dir') ?? 'certs';
  try {
    // A new user runs this before any `npm start`: make the same dev certificates it would.
    await step(`cannot prepare the certificates in --cert-dir ${certDir}`, () => ensureDevCerts(certDir));
    const out = await step('cannot render app.yaml', () => renderManifests({ certDir, localPort: port ? Number(port) : undefined }));
    process.stdout.write(out);
  } catch (e) {
    process.stderr.write(startupFailure(e, false).replace(/^farm-apiserver:/, 'manifests:'));
    process.exit(1);
  }
}
