// The production entry point: <outdir>/farm-apiserver.js (src/bootstrap.ts), which runs the server,
// src/main.ts bundled by esbuild into one CommonJS script <outdir>/farm-apiserver.cjs, with V8's
// compiled code of an earlier start (a code cache needs a script: Node 20 has none for ES modules).
// Why one bundle: resolving and loading ~1,000 small module files is most of a start-up;
// client-node's import alone took ~0.8 s as files against ~0.13 s bundled (docs/benchmarks.md,
// "Start-up"). What only some starts need (client-node, selfsigned, tracing, the etcd client) stays
// behind esbuild's lazy module wrappers: parsed, but not run unless imported.
// The etcd client (ours, on node:http2) is bundled too. The OTLP gRPC exporter stays
// a package (it is loaded only when tracing is on), and the tracing SDK's own grpc-js import with it:
// the exporter checks its credentials with instanceof against the grpc-js it loads itself. The
// outdir must be a direct child of the repository (src/version.ts reads ../package.json).
import { build, type Plugin } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedCodeCache } from './seedCodeCache.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const ENTRY_NAME = 'farm-apiserver';

/** The tracing SDK hands the OTLP exporter (a package) credentials: from the same grpc-js the exporter loads. */
const tracingGrpcExternal: Plugin = {
  name: 'tracing-grpc-external',
  setup(b) {
    b.onResolve({ filter: /^@grpc\/grpc-js$/ }, (args) => (/[\\/]observability[\\/]tracingSdk\.ts$/.test(args.importer) ? { path: args.path, external: true } : undefined));
  },
};

export async function bundle(outdir = join(REPO, 'dist')): Promise<string> {
  // Chunks of earlier (split) builds are named by content hash: they would pile up.
  mkdirSync(outdir, { recursive: true });
  for (const f of readdirSync(outdir)) if (f.startsWith(ENTRY_NAME) && /\.c?js$/.test(f)) rmSync(join(outdir, f));
  // absWorkingDir: the alias below is resolved from here, not from the caller's cwd.
  const common = { absWorkingDir: REPO, bundle: true, platform: 'node', target: 'node20', logLevel: 'warning' } as const;
  await build({
    ...common,
    entryPoints: [join(REPO, 'src/main.ts')],
    format: 'cjs',
    outfile: join(outdir, `${ENTRY_NAME}.cjs`),
    external: ['@opentelemetry/exporter-trace-otlp-grpc'],
    // Node's own punycode warns (DEP0040, Node 22+) when loaded from outside node_modules, as the
    // bundled tr46 (client-node's URL parsing) now is: the same code from npm instead.
    alias: { punycode: 'punycode/' },
    plugins: [tracingGrpcExternal],
    // A CommonJS script has no import.meta: the same URL from its file name.
    define: { 'import.meta.url': 'farmBundleUrl' },
    banner: { js: "const farmBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  // The entry imports nothing of the server's (it would compile before the cache is in place).
  await build({ ...common, entryPoints: [join(REPO, 'src/bootstrap.ts')], format: 'esm', outfile: join(outdir, `${ENTRY_NAME}.js`) });
  return join(outdir, `${ENTRY_NAME}.js`);
}

/**
 * A bundle outside dist/ (tests, benchmarks): `<root>/dist/farm-apiserver.js` with a copy of
 * package.json in `root`. `root` must be inside the repository, where the kept packages resolve.
 */
export async function bundleInto(root: string): Promise<string> {
  mkdirSync(root, { recursive: true });
  copyFileSync(join(REPO, 'package.json'), join(root, 'package.json'));
  return bundle(join(root, 'dist'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const entry = await bundle();
  // The cache a new pod's first start uses (scripts/seedCodeCache.ts).
  await seedCodeCache(entry);
  process.stdout.write(`${entry}\n`);
}
