// The production bundle (scripts/bundle.ts): each start compiles every chunk it loads, so what the
// chunks hold is start-up time. A dynamic import of client-node itself once kept all of its generated
// API (14 MB of the bundle's 20) where the server uses only KubeConfig.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/kubectl.js';
import { bundleInto } from '../../scripts/bundle.js';

// Inside the repository, where the packages the bundle keeps resolve.
const root = join(import.meta.dirname, '..', '..', '.cache', `bundle-test-${process.pid}`);
let chunks: { name: string; text: string; bytes: number }[] = [];
let entry = '';

/** The environment of a child whose temp dir is `tmpDir`, with Node's own compile-cache switches unset. */
function childEnv(tmpDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmpDir };
  delete env.NODE_COMPILE_CACHE;
  delete env.NODE_DISABLE_COMPILE_CACHE;
  return env;
}

/** Cache files under `dir` (Node makes its per-version directory as soon as the cache is enabled). */
function cacheFiles(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
}

before(async () => {
  entry = await bundleInto(root);
  const dir = join(entry, '..');
  chunks = readdirSync(dir).filter((f) => f.endsWith('.js')).map((name) => ({
    name, text: readFileSync(join(dir, name), 'utf8'), bytes: statSync(join(dir, name)).size,
  }));
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('the bundle', () => {
  it('keeps of client-node only what KubeConfig needs: none of its generated API clients', () => {
    assert.ok(chunks.some((c) => c.text.includes('loadFromClusterAndUser(')), 'KubeConfig\'s own code is in the bundle');
    const withApis = chunks.filter((c) => c.text.includes('CoreV1Api'));
    assert.deepEqual(withApis.map((c) => c.name), [], 'chunks with client-node\'s generated CoreV1Api');
  });

  it('has no .proto parser and no grpc-js: the etcd client is ours (~0.1 s of every start when they were here)', () => {
    assert.ok(chunks.some((c) => c.text.includes('/etcdserverpb.KV/Range')), 'the etcd client is in the bundle');
    // @grpc/proto-loader's and protobufjs's loadSync; grpc-js's Client.
    const parsers = chunks.filter((c) => /function loadSync\(|makeUnaryRequest\(method/.test(c.text));
    assert.deepEqual(parsers.map((c) => c.name), []);
  });

  it('is under 10 MB of JavaScript in all', () => {
    const total = chunks.reduce((n, c) => n + c.bytes, 0);
    assert.ok(total < 10 * 1024 * 1024, `the chunks hold ${(total / 1024 / 1024).toFixed(1)} MB`);
  });

  it('uses npm\'s punycode, not Node\'s deprecated one (DEP0040 from outside node_modules)', () => {
    const requiring = chunks.filter((c) => /require\("punycode"\)/.test(c.text));
    assert.deepEqual(requiring.map((c) => c.name), []);
  });

  it('keeps V8\'s compiled code between starts where Node can (22.1+: module.enableCompileCache), and starts on older Node', () => {
    // Not NODE_COMPILE_CACHE (Node would turn the cache on by itself): the default place, under TMPDIR.
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      const r = spawnSync(process.execPath, [entry, '--help'], { env: childEnv(tmp), encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^Usage: farm-apiserver/);
      const cache = join(tmp, 'node-compile-cache');
      const cached = cacheFiles(cache);
      const canCache = typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === 'function';
      assert.equal(cached > 0, canCache, `${process.version}: ${cached} entries under ${cache}`);
      // One that others may write is not used: the cache is code the server runs.
      rmSync(cache, { recursive: true, force: true });
      mkdirSync(cache);
      chmodSync(cache, 0o777);
      const shared = spawnSync(process.execPath, [entry, '--help'], { env: childEnv(tmp), encoding: 'utf8' });
      assert.equal(shared.status, 0, shared.stderr);
      assert.deepEqual(readdirSync(cache), [], 'entries in a world-writable cache dir');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('starts whatever the temp dir is: missing, a file, unwritable, or where mkdir cannot work (/proc)', () => {
    const file = join(root, 'package.json');
    for (const dir of ['/nonexistent/tmp', file, '/proc/nonexistent', '/proc']) {
      const r = spawnSync(process.execPath, [entry, '--help'], { env: childEnv(dir), encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, `TMPDIR=${dir}: ${r.error?.message ?? r.stderr}`);
      assert.match(r.stdout, /^Usage: farm-apiserver/, `TMPDIR=${dir}`);
    }
  });

  it('a server killed (SIGKILL) a while after it started has written its compile cache already (where Node has one)', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-flush-'));
    const server = spawn(process.execPath, [entry, '--port', String(await freePort()), '--bind-address', '127.0.0.1', '--cert-dir', join(tmp, 'certs'), '--log-level', 'warn'], { env: childEnv(tmp), stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      server.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      server.stderr.on('data', (d: Buffer) => { out += d.toString(); });
      const deadline = Date.now() + 30_000;
      while (!out.includes('is serving on') && Date.now() < deadline && server.exitCode === null) await sleep(50);
      assert.match(out, /is serving on/, out);
      await sleep(3_000);
      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      const canFlush = typeof (nodeModule as { flushCompileCache?: unknown }).flushCompileCache === 'function';
      const cached = cacheFiles(join(tmp, 'node-compile-cache'));
      assert.equal(cached > 0, canFlush, `${process.version}: ${cached} cache files after SIGKILL`);
    } finally {
      server.kill('SIGKILL');
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
