// The Dockerfile, replayed without a container engine (none here): its build stage's files copied as
// its COPY lines say into a directory of their own, its build command run there, then its runtime
// stage's files and ENTRYPOINT started as its USER. What this catches: a file the build reads that the
// stage does not copy, and an image whose first start would not run the build's code cache. What it
// cannot: the base image itself (its Node is this machine's here) and `npm ci`/`npm prune` (node_modules
// are this checkout's, by symlink).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/freePort.js';
import { deserializedSizes } from '../../scripts/seedCodeCache.js';
import { readCacheFile, sourceKey } from '../../src/bootstrap/codeCacheFiles.js';

const REPO = join(import.meta.dirname, '..', '..');
// Inside the repository: npm puts the ancestors' node_modules/.bin on PATH, and the packages resolve.
const work = join(REPO, '.cache', `dockerfile-test-${process.pid}`);

interface Stage {
  lines: string[];
}

/** The Dockerfile's stages, their instructions joined across line continuations, comments dropped. */
function stages(): Stage[] {
  const out: Stage[] = [];
  const text = readFileSync(join(REPO, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (/^FROM\s/i.test(line)) out.push({ lines: [] });
    out.at(-1)?.lines.push(line);
  }
  return out;
}

/** COPY <src...> <dest> of the build context (not --from) into `dir`, relative to WORKDIR. */
function copyFromContext(line: string, dir: string): void {
  const args = line.split(/\s+/).slice(1);
  const dest = join(dir, args.pop() ?? '');
  for (const src of args) {
    const target = args.length > 1 || dest.endsWith('/') ? join(dest, basename(src)) : dest;
    cpSync(join(REPO, src), target, { recursive: true });
  }
}

const [build, runtime] = stages();
const buildDir = join(work, 'build');
const runDir = join(work, 'run');

before(() => {
  mkdirSync(buildDir, { recursive: true });
  mkdirSync(runDir, { recursive: true });
  // So that a USER other than ours can read what was copied (as an image's files are).
  for (const d of [work, buildDir, runDir]) chmodSync(d, 0o755);
});
after(() => rmSync(work, { recursive: true, force: true }));

describe('the Dockerfile, replayed', () => {
  it('builds the bundle and its code cache from only what the build stage copies', () => {
    assert.ok(build && runtime, 'two stages');
    const runs = build.lines.filter((l) => l.startsWith('RUN '));
    // The replay runs these as it knows them: a changed one needs the replay changed too.
    assert.deepEqual(runs, ['RUN npm ci --no-audit --no-fund', 'RUN npm run build && npm prune --omit=dev']);
    for (const line of build.lines.filter((l) => l.startsWith('COPY '))) copyFromContext(line, buildDir);
    symlinkSync(join(REPO, 'node_modules'), join(buildDir, 'node_modules'));
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const r = spawnSync('npm', ['run', 'build'], { cwd: buildDir, encoding: 'utf8', env });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const dist = readdirSync(join(buildDir, 'dist'));
    assert.ok(dist.includes('farm-apiserver.js') && dist.includes('farm-apiserver.cjs'), dist.join(' '));
    assert.equal(dist.filter((f) => /^farm-apiserver-[0-9a-f]{16}-[0-9a-f]+\.v8$/.test(f)).length, 1, 'one code cache');
  });

  it('starts from the runtime stage\'s files as its USER, with the build\'s code cache', async () => {
    assert.ok(existsSync(join(buildDir, 'dist')), 'the build stage ran');
    for (const line of runtime.lines.filter((l) => l.startsWith('COPY --from=build '))) {
      const [src, dest] = line.split(/\s+/).slice(2);
      const from = join(buildDir, src.replace(/^\/app\/?/, ''));
      const to = join(runDir, dest.endsWith('/') || dest === './' ? basename(src) : dest);
      if (basename(src) === 'node_modules') symlinkSync(join(REPO, 'node_modules'), to);
      else cpSync(from, to, { recursive: true });
    }
    const user = runtime.lines.find((l) => l.startsWith('USER '))?.split(/\s+/)[1]?.split(':').map(Number);
    const entry = JSON.parse(runtime.lines.find((l) => l.startsWith('ENTRYPOINT '))?.slice('ENTRYPOINT '.length) ?? '[]') as string[];
    assert.equal(entry[0], 'node');
    // As the image's user when we may switch to it (root, as in CI); as ourselves otherwise.
    const as = process.getuid?.() === 0 && user ? { uid: user[0], gid: user[1] } : {};
    const cache = mkdtempSync(join(tmpdir(), 'farm-docker-cache-'));
    chmodSync(cache, 0o777);
    try {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, NODE_ENV: 'production', NODE_COMPILE_CACHE: join(cache, 'compile-cache') };
      // A new pod's first start: V8 deserializes the build's code cache (its size: the file less our header).
      const seed = readdirSync(join(runDir, 'dist')).find((f) => f.endsWith('.v8')) ?? '';
      const help = spawnSync(process.execPath, ['--profile-deserialization', ...entry.slice(1), '--help'], { cwd: runDir, env, encoding: 'utf8', ...as });
      assert.equal(help.status, 0, help.stderr);
      const sizes = deserializedSizes(help.stdout);
      const seedBytes = readCacheFile(join(runDir, 'dist', seed), sourceKey(readFileSync(join(runDir, 'dist', 'farm-apiserver.cjs'))), () => true)?.length;
      assert.ok(seedBytes && sizes.includes(seedBytes), `the build's cache (${seedBytes} bytes) was not run: ${sizes.filter((n) => n > 100_000).join(', ')}`);
      // And it serves (standalone: its certificates in a directory it may write).
      const certs = join(cache, 'certs');
      mkdirSync(certs);
      chmodSync(certs, 0o777);
      const server = spawn(process.execPath, [...entry.slice(1), '--port', String(await freePort()), '--bind-address', '127.0.0.1', '--cert-dir', certs], { cwd: runDir, env, stdio: ['ignore', 'pipe', 'pipe'], ...as });
      let out = '';
      server.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      server.stderr.on('data', (d: Buffer) => { out += d.toString(); });
      const deadline = Date.now() + 30_000;
      while (!out.includes('is serving on') && server.exitCode === null && Date.now() < deadline) await sleep(50);
      server.kill('SIGTERM');
      if (server.exitCode === null) await new Promise((r) => server.once('exit', r));
      assert.match(out, /is serving on/, out);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
