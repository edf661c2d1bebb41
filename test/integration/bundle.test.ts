// The production bundle (scripts/bundle.ts): a start without a compile cache parses all of it, so
// what it holds is start-up time. A dynamic import of client-node itself once kept all of its
// generated API (14 MB of the bundle's 20) where the server uses only KubeConfig.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/kubectl.js';
import { bundleInto } from '../../scripts/bundle.js';
import { deserializedSizes, seedCodeCache } from '../../scripts/seedCodeCache.js';
import { readCacheFile, seedFileName, shortHash, sourceKey, thisNode } from '../../src/bootstrap/codeCacheFiles.js';

// Inside the repository, where the packages the bundle keeps resolve.
const root = join(import.meta.dirname, '..', '..', '.cache', `bundle-test-${process.pid}`);
let chunks: { name: string; text: string; bytes: number }[] = [];
let entry = '';

/** The environment of a child whose temp dir is `tmpDir`, with the compile-cache switches unset. */
function childEnv(tmpDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmpDir };
  delete env.NODE_COMPILE_CACHE;
  delete env.NODE_DISABLE_COMPILE_CACHE;
  return env;
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  assert.ok(r.pid);
  return r.pid;
}

/** The compile cache's files under `tmpDir` (src/bootstrap.ts), with their contents. */
function cacheFiles(tmpDir: string): { name: string; data: Buffer; mtimeMs: number }[] {
  const dir = join(tmpDir, 'farm-apiserver-compile-cache');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => name.endsWith('.v8')).map((name) => ({ name, data: readFileSync(join(dir, name)), mtimeMs: statSync(join(dir, name)).mtimeMs }));
}

/** Runs the bundled server until it serves, `afterMs` more, then stops it with `signal`; the output. */
async function serveFor(tmpDir: string, afterMs: number, signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL', o: { entry?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const server = spawn(process.execPath, [o.entry ?? entry, '--port', String(await freePort()), '--bind-address', '127.0.0.1', '--cert-dir', join(tmpDir, 'certs'), '--log-level', 'warn'], { env: { ...childEnv(tmpDir), ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  try {
    server.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    server.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const deadline = Date.now() + 30_000;
    while (!out.includes('is serving on') && Date.now() < deadline && server.exitCode === null) await sleep(50);
    assert.match(out, /is serving on/, out);
    await sleep(afterMs);
    assert.equal(server.exitCode, null, out);
    server.kill(signal);
    return out;
  } finally {
    if (server.exitCode === null) server.kill(signal);
    if (server.exitCode === null) await new Promise((r) => server.once('exit', r));
  }
}

before(async () => {
  entry = await bundleInto(root);
  const dir = join(entry, '..');
  chunks = readdirSync(dir).filter((f) => /\.c?js$/.test(f)).map((name) => ({
    name, text: readFileSync(join(dir, name), 'utf8'), bytes: statSync(join(dir, name)).size,
  }));
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('the bundle', () => {
  it('keeps of client-node only what KubeConfig needs: not its index (watch, exec, informers …), no generated API client', () => {
    assert.ok(chunks.some((c) => c.text.includes('loadFromClusterAndUser(')), 'KubeConfig\'s own code is in the bundle');
    // esbuild names each lazily run module by its path, in the code.
    const withIndex = chunks.filter((c) => c.text.includes('"node_modules/@kubernetes/client-node/dist/index.js"'));
    assert.deepEqual(withIndex.map((c) => c.name), [], 'files with client-node\'s index module');
    const withApis = chunks.filter((c) => c.text.includes('class CoreV1ApiRequestFactory'));
    assert.deepEqual(withApis.map((c) => c.name), [], 'files with client-node\'s generated CoreV1Api');
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

  it('is an entry that loads no server code and one CommonJS script (a code cache needs a script)', () => {
    assert.deepEqual(chunks.map((c) => c.name).sort(), ['farm-apiserver.cjs', 'farm-apiserver.js']);
    const loader = chunks.find((c) => c.name === 'farm-apiserver.js');
    assert.ok(loader && loader.bytes < 16 * 1024, `the entry is ${loader?.bytes} bytes`);
    assert.doesNotMatch(loader.text, /fastify|zod/);
  });

  it('keeps V8\'s compiled code of a start, uses it at the next, grows it at exit; a damaged cache is replaced, never run', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    const cacheFile = () => {
      const files = cacheFiles(tmp);
      assert.equal(files.length, 1, `${files.length} cache files`);
      return files[0];
    };
    try {
      // A server killed soon after it serves has written nothing yet: the code a start compiles is
      // what makes a cache worth having.
      await serveFor(tmp, 300);
      assert.deepEqual(cacheFiles(tmp), [], 'a cache written before the start was over');
      // Then 2 s after the start.
      await serveFor(tmp, 2_700);
      const first = cacheFile();
      assert.ok(first.data.length > 100_000, `a cache of ${first.data.length} bytes`);
      // Used, so not written again while serving (a rejected or missing one is, as below) …
      await serveFor(tmp, 2_700);
      assert.deepEqual(cacheFiles(tmp), [first]);
      // … but at exit with what was compiled since (here the shutdown's code).
      await serveFor(tmp, 300, 'SIGTERM');
      const grown = cacheFile();
      assert.ok(grown.data.length > first.data.length, `${grown.data.length} bytes after a shutdown, ${first.data.length} before`);
      // An early exit leaves little; the next server's exit makes it whole.
      rmSync(join(tmp, 'farm-apiserver-compile-cache', grown.name));
      assert.equal(spawnSync(process.execPath, [entry, '--help'], { env: childEnv(tmp) }).status, 0);
      const small = cacheFile();
      assert.ok(small.data.length < first.data.length, `--help left ${small.data.length} bytes`);
      await serveFor(tmp, 300, 'SIGTERM');
      assert.ok(cacheFile().data.length > first.data.length);
      // A flipped byte in the code that V8's header check would let through: the checksum does not.
      const file = join(tmp, 'farm-apiserver-compile-cache', small.name);
      const damaged = Buffer.from(cacheFile().data);
      damaged[damaged.length >> 1] ^= 0xff;
      writeFileSync(file, damaged);
      // Saving removes the cache of an earlier build of this bundle, not another bundle's.
      const [where] = small.name.split('-');
      const earlier = join(tmp, 'farm-apiserver-compile-cache', `${where}-0000.v8`);
      const other = join(tmp, 'farm-apiserver-compile-cache', '0000-0000.v8');
      writeFileSync(earlier, 'x');
      writeFileSync(other, 'x');
      await serveFor(tmp, 2_700);
      assert.equal(existsSync(earlier), false, 'the earlier build\'s cache is still there');
      rmSync(other);
      assert.ok(!cacheFile().data.equals(damaged), 'the damaged cache was not replaced');
      // Garbage of any length (here shorter than the header) is no cache either.
      writeFileSync(file, Buffer.from([1, 2]));
      await serveFor(tmp, 2_700);
      assert.ok(cacheFile().data.length > 100_000);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('runs the bundle\'s code in strict mode, as the ES modules it was made of', () => {
    const copy = join(root, 'strict', 'dist');
    mkdirSync(copy, { recursive: true });
    copyFileSync(join(root, 'package.json'), join(root, 'strict', 'package.json'));
    for (const c of chunks) writeFileSync(join(copy, c.name), c.text);
    // Sloppy mode would give `this` the global object here.
    writeFileSync(join(copy, 'farm-apiserver.cjs'), `${chunks.find((c) => c.name === 'farm-apiserver.cjs')?.text}\nif ((function () { return this; })() !== undefined) throw new Error('sloppy mode');\n`);
    const r = spawnSync(process.execPath, [join(copy, 'farm-apiserver.js'), '--help'], { env: { ...childEnv(tmpdir()), NODE_DISABLE_COMPILE_CACHE: '1' }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });

  it('keys the cache by the bundle\'s content: another build of the same length and time runs its own code', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    const copy = join(root, 'samelength', 'dist');
    mkdirSync(copy, { recursive: true });
    copyFileSync(join(root, 'package.json'), join(root, 'samelength', 'package.json'));
    for (const c of chunks) writeFileSync(join(copy, c.name), c.text);
    const cjs = join(copy, 'farm-apiserver.cjs');
    try {
      const when = new Date('2020-01-01T00:00:00Z');
      utimesSync(cjs, when, when);
      assert.match(await serveFor(tmp, 2_700, 'SIGKILL', { entry: join(copy, 'farm-apiserver.js') }), /standalone mode: every request/);
      assert.equal(cacheFiles(tmp).length, 1);
      // The same file (inode), length and mtime; one message differs.
      const text = readFileSync(cjs, 'latin1');
      assert.ok(text.includes('standalone mode: every request'));
      writeFileSync(cjs, text.replace('standalone mode: every request', 'STANDALONE MODE: EVERY REQUEST'), 'latin1');
      utimesSync(cjs, when, when);
      const out = await serveFor(tmp, 300, 'SIGKILL', { entry: join(copy, 'farm-apiserver.js') });
      assert.match(out, /STANDALONE MODE: EVERY REQUEST/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('drops a cache whose last read never finished (V8 aborts on some damaged ones), then makes a new one; a live sibling\'s read is no crash', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      await serveFor(tmp, 2_700);
      const [before] = cacheFiles(tmp);
      assert.ok(before);
      const dir = join(tmp, 'farm-apiserver-compile-cache');
      // A --workers sibling reading it now (this test's process is alive): the cache is run, kept.
      const sibling = join(dir, `${before.name}.loading.${process.pid}`);
      writeFileSync(sibling, '');
      await serveFor(tmp, 2_700);
      assert.deepEqual(cacheFiles(tmp), [before], 'a sibling\'s read taken for a crash');
      assert.equal(existsSync(sibling), true);
      rmSync(sibling);
      // The guard of a process that is gone: it died reading.
      const guard = join(dir, `${before.name}.loading.${deadPid()}`);
      writeFileSync(guard, '');
      await sleep(20); // a new file's mtime differs
      await serveFor(tmp, 2_700);
      const [after] = cacheFiles(tmp);
      assert.ok(after && after.mtimeMs > before.mtimeMs, 'the cache was not made again');
      assert.equal(existsSync(guard), false);
      // An accepted one is not written again, and no guard is left once read.
      await serveFor(tmp, 2_700);
      assert.deepEqual(cacheFiles(tmp), [after]);
      assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.loading')), []);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('keeps its files in a private farm-apiserver directory under NODE_COMPILE_CACHE (Node 22+ makes that one with the umask)', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      const nodes = join(tmp, 'node-cache');
      mkdirSync(nodes, { mode: 0o777 });
      chmodSync(nodes, 0o777);
      await serveFor(tmp, 2_700, 'SIGKILL', { env: { NODE_COMPILE_CACHE: nodes } });
      const ours = join(nodes, 'farm-apiserver');
      assert.equal(statSync(ours).mode & 0o777, 0o700);
      assert.equal(readdirSync(ours).filter((f) => f.endsWith('.v8')).length, 1);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('uses no cache directory that others may write, and none when NODE_DISABLE_COMPILE_CACHE is set', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      const r = spawnSync(process.execPath, [entry, '--help'], { env: { ...childEnv(tmp), NODE_DISABLE_COMPILE_CACHE: '1' }, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(existsSync(join(tmp, 'farm-apiserver-compile-cache')), false);
      const shared = join(tmp, 'farm-apiserver-compile-cache');
      mkdirSync(shared);
      chmodSync(shared, 0o777);
      await serveFor(tmp, 2_700);
      assert.deepEqual(readdirSync(shared), [], 'entries in a world-writable cache dir');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('starts whatever the temp dir or NODE_COMPILE_CACHE is: missing, a file, unwritable, or where mkdir cannot work (/proc)', () => {
    const file = join(root, 'package.json');
    for (const dir of ['/nonexistent/tmp', file, '/proc/nonexistent', '/proc']) {
      const r = spawnSync(process.execPath, [entry, '--help'], { env: childEnv(dir), encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, `TMPDIR=${dir}: ${r.error?.message ?? r.stderr}`);
      assert.match(r.stdout, /^Usage: farm-apiserver/, `TMPDIR=${dir}`);
      // Not under /proc: Node 22+ reads NODE_COMPILE_CACHE itself before any of our code, and its
      // recursive mkdir there never returns (Node's, out of our reach; Node 20 starts).
      if (dir.startsWith('/proc')) continue;
      const named = spawnSync(process.execPath, [entry, '--help'], { env: { ...childEnv(tmpdir()), NODE_COMPILE_CACHE: join(dir, 'cache') }, encoding: 'utf8', timeout: 20_000 });
      assert.equal(named.status, 0, `NODE_COMPILE_CACHE=${dir}/cache: ${named.error?.message ?? named.stderr}`);
    }
  });
});

describe('the build\'s code cache (a new pod\'s first start)', () => {
  // A copy of the bundle with the build's cache: the tests above run without one.
  const seeded = join(root, 'seeded');
  let seededEntry = '';
  let seed = '';
  let bundleBytes = Buffer.alloc(0);
  before(async () => {
    mkdirSync(join(seeded, 'dist'), { recursive: true });
    copyFileSync(join(root, 'package.json'), join(seeded, 'package.json'));
    for (const c of chunks) writeFileSync(join(seeded, 'dist', c.name), c.text);
    seededEntry = join(seeded, 'dist', 'farm-apiserver.js');
    bundleBytes = readFileSync(join(seeded, 'dist', 'farm-apiserver.cjs'));
    seed = await seedCodeCache(seededEntry);
  });

  /** The sizes of the code caches (> 100 kB: the bundle's) V8 accepted in `entry --help`, and its output. */
  function run(env: NodeJS.ProcessEnv, entry = seededEntry): { caches: number[]; stdout: string } {
    const r = spawnSync(process.execPath, ['--profile-deserialization', entry, '--help'], { env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return { caches: deserializedSizes(r.stdout).filter((n) => n > 100_000), stdout: r.stdout };
  }
  const acceptedCaches = (env: NodeJS.ProcessEnv) => run(env).caches;
  /** The code held by a cache file of this bundle. */
  const codeIn = (file: string) => readCacheFile(file, sourceKey(bundleBytes), () => true)?.length ?? -1;
  const seedCode = () => codeIn(seed);
  /** Our own cache file of the seeded copy under `tmp`. */
  const ownFileIn = (tmp: string) => join(tmp, 'farm-apiserver-compile-cache', `${shortHash([join(seeded, 'dist', 'farm-apiserver.cjs'), process.version, process.arch, process.versions.v8])}-${sourceKey(bundleBytes)}.v8`);

  it('is made beside the bundle by a warm-up start, readable by all, named by the Node and the source; once per build', async () => {
    assert.equal(seed, join(seeded, 'dist', `farm-apiserver-${shortHash([process.version, process.arch, process.versions.v8])}-${sourceKey(bundleBytes)}.v8`));
    assert.equal(statSync(seed).mode & 0o777, 0o644);
    // The warm-up ran requests, not only the start: more than a start leaves.
    assert.ok(seedCode() > 1_000_000, `${seedCode()} bytes`);
    const { mtimeMs } = statSync(seed);
    // Another Node's is kept, another build's is removed.
    const otherNode = join(seeded, 'dist', `farm-apiserver-${'0'.repeat(16)}-${sourceKey(bundleBytes)}.v8`);
    const otherBuild = join(seeded, 'dist', `farm-apiserver-${shortHash([process.version, process.arch, process.versions.v8])}-00000000100.v8`);
    writeFileSync(otherNode, 'x');
    writeFileSync(otherBuild, 'x');
    assert.equal(await seedCodeCache(seededEntry), seed);
    assert.equal(statSync(seed).mtimeMs, mtimeMs, 'made again');
    assert.equal(existsSync(otherBuild), false);
    assert.equal(existsSync(otherNode), true);
    rmSync(otherNode);
    // One that others may write is made again, 0644 whatever the umask.
    chmodSync(seed, 0o666);
    const umask = process.umask(0o077);
    try {
      await seedCodeCache(seededEntry);
    } finally {
      process.umask(umask);
    }
    assert.equal(statSync(seed).mode & 0o777, 0o644);
  });

  it('is what a start with an empty cache directory runs; then its own, saved 2 s after a start that compiled more', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    const good = readFileSync(seed);
    try {
      assert.deepEqual(acceptedCaches(childEnv(tmp)), [seedCode()]);
      rmSync(join(tmp, 'farm-apiserver-compile-cache'), { recursive: true });
      // A build's cache of less than a server start compiles (here --help's): a server killed after
      // 2 s has saved its own, bigger, which the next start runs.
      const small = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
      run(childEnv(small), join(root, 'dist', 'farm-apiserver.js'));
      const [helpCache] = cacheFiles(small);
      rmSync(small, { recursive: true, force: true });
      assert.ok(helpCache);
      writeFileSync(seed, helpCache.data);
      assert.deepEqual(acceptedCaches(childEnv(tmp)), [codeIn(seed)]);
      rmSync(ownFileIn(tmp), { force: true });
      await serveFor(tmp, 2_700, 'SIGKILL', { entry: seededEntry });
      const own = codeIn(ownFileIn(tmp));
      assert.ok(own > codeIn(seed), `its own cache: ${own} bytes, the build's ${codeIn(seed)}`);
      assert.deepEqual(acceptedCaches(childEnv(tmp)), [own]);
    } finally {
      writeFileSync(seed, good);
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('runs in every one of several processes starting at once (--workers siblings in a new pod)', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      const runs = await Promise.all(Array.from({ length: 4 }, () => new Promise<string>((resolve) => {
        const child = spawn(process.execPath, ['--profile-deserialization', seededEntry, '--help'], { env: childEnv(tmp), stdio: ['ignore', 'pipe', 'ignore'] });
        let out = '';
        child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
        child.once('close', () => resolve(out));
      })));
      // Each ran a cache of at least the build's size (the build's, or one a sibling's exit grew).
      for (const out of runs) {
        const sizes = deserializedSizes(out);
        assert.ok(sizes.some((n) => n >= seedCode()), `a process without the cache: ${sizes.filter((n) => n > 100_000).join(', ')}`);
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('is not run when damaged, of another build, writable by others, turned off, or after a read of it never finished', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    const good = readFileSync(seed);
    try {
      const env = childEnv(tmp);
      const ownFile = ownFileIn(tmp);
      // --help prints the usage, which the warm-up never did: its exit leaves a cache of its own, grown.
      assert.deepEqual(acceptedCaches(env), [seedCode()]);
      assert.ok(codeIn(ownFile) > seedCode());
      rmSync(ownFile);
      // A start that runs no cache leaves its own (its exit's save), which the next one would use instead.
      const runsNone = (e: NodeJS.ProcessEnv, why: string) => {
        assert.deepEqual(acceptedCaches(e), [], why);
        rmSync(ownFile, { force: true });
      };
      runsNone({ ...env, NODE_DISABLE_COMPILE_CACHE: '1' }, 'turned off');
      for (const mode of [0o666, 0o664]) {
        chmodSync(seed, mode);
        runsNone(env, `a seed of mode ${mode.toString(8)} ran`);
      }
      chmodSync(seed, 0o644);
      const damaged = Buffer.from(good);
      damaged[damaged.length >> 1] ^= 0xff;
      writeFileSync(seed, damaged);
      runsNone(env, 'a damaged seed ran');
      // No directory of ours, so no guard: no cache at all.
      runsNone(childEnv('/nonexistent/tmp'), 'without a directory of ours');
      writeFileSync(seed, good);
      // The guard of a start that died reading it: this one goes without, and marks the build's
      // cache as not to be read here again (the next start has no cache of its own either).
      writeFileSync(`${ownFile}.loading.${deadPid()}`, '');
      runsNone(env, 'after a read that never finished');
      runsNone(env, 'after a read that never finished, the next start');
      rmSync(`${ownFile}.noseed`);
      assert.deepEqual(acceptedCaches(env), [seedCode()]);
    } finally {
      writeFileSync(seed, good);
      chmodSync(seed, 0o644);
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('is not run for another bundle of the same length, even renamed to its name', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    const other = join(root, 'seeded-other', 'dist');
    try {
      mkdirSync(other, { recursive: true });
      copyFileSync(join(root, 'package.json'), join(root, 'seeded-other', 'package.json'));
      for (const c of chunks) writeFileSync(join(other, c.name), c.text);
      const text = bundleBytes.toString('latin1');
      assert.ok(text.includes('Usage: farm-apiserver'));
      const edited = Buffer.from(text.replace('Usage: farm-apiserver', 'USAGE: FARM-APISERVER'), 'latin1');
      writeFileSync(join(other, 'farm-apiserver.cjs'), edited);
      copyFileSync(seed, join(other, seedFileName(thisNode(), edited)));
      const r = run(childEnv(tmp), join(other, 'farm-apiserver.js'));
      assert.deepEqual(r.caches, []);
      assert.match(r.stdout, /USAGE: FARM-APISERVER/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('is not run when someone other than the bundle\'s owner owns it', { skip: process.getuid?.() !== 0 && 'changing a file\'s owner needs root' }, () => {
    const tmp = mkdtempSync(join(tmpdir(), 'farm-compile-cache-'));
    try {
      chownSync(seed, 1000, 1000);
      assert.deepEqual(acceptedCaches(childEnv(tmp)), []);
    } finally {
      chownSync(seed, 0, 0);
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
