// The bundle's entry point (dist/farm-apiserver.js). It runs the server's bundle (farm-apiserver.cjs,
// one CommonJS script) with V8's compiled code of an earlier start, so a start does not compile the
// same ~6 MB of JavaScript again (CPU per start 250 -> 170 ms standalone), on every Node (20 has no
// module.enableCompileCache, and Node's own cache is per ES module file). NODE_COMPILE_CACHE names
// the place, NODE_DISABLE_COMPILE_CACHE=1 turns it off, as for Node's own cache. A first start (a
// new pod) uses the cache the build made beside the bundle (scripts/seedCodeCache.ts).
// Nothing here may import the server: its modules would compile before the cache is in place.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, type Stats, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, Script } from 'node:vm';
import { BUNDLE_NAME, readCacheFile, seedFileName, shortHash, sourceKey, thisNode, wrappedSource, writeCacheFile } from './bootstrap/codeCacheFiles.js';

/** When the compiled code is first saved: after the start, with what it compiled (not only the top level). */
const SAVE_AFTER_MS = 2_000;

/**
 * Makes `dir` (mode 0700) unless it is there. Not `recursive`, which loops forever where mkdir answers
 * ENOENT under an existing parent (e.g. under /proc, as Node's own cache-dir creation does).
 */
function mkdirOnce(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return false;
  }
  return true;
}

/** A directory of ours that only we can write (the cache is code we run); none on a read-only root file system. */
function ownCacheDir(dir: string): string | undefined {
  if (!mkdirOnce(dir)) return undefined;
  const st = lstatSync(dir);
  return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0 ? dir : undefined;
}

/**
 * Our directory: `$NODE_COMPILE_CACHE/farm-apiserver` (Node 22+ makes and uses that directory itself,
 * with the umask's mode) or `<tmpdir>/farm-apiserver-compile-cache`.
 */
function cacheDir(): string | undefined {
  const nodes = process.env.NODE_COMPILE_CACHE;
  if (!nodes) return ownCacheDir(join(tmpdir(), 'farm-apiserver-compile-cache'));
  // Under a parent that is not there, no cache.
  return mkdirOnce(nodes) ? ownCacheDir(join(nodes, 'farm-apiserver')) : undefined;
}

/** Where this bundle's cache goes, and the key of the source V8 compiles (sourceKey). */
interface CacheFile {
  file: string;
  key: string;
}

/**
 * The cache file for this bundle on this Node: `<where>-<key>.v8`, where = the bundle's path and the
 * Node that compiled it, key = the source (saving removes the other builds' files).
 */
function cacheFileFor(bundle: string, source: Buffer): CacheFile | undefined {
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  try {
    const dir = cacheDir();
    if (!dir) return undefined;
    const n = thisNode();
    const key = sourceKey(source);
    return { file: join(dir, `${shortHash([bundle, n.version, n.arch, n.v8])}-${key}.v8`), key };
  } catch {
    return undefined;
  }
}

/** A cache in our directory: a file only we wrote. */
const readOwnCache = (c: CacheFile) => readCacheFile(c.file, c.key, (st) => st.uid === process.getuid?.());

/**
 * The build's cache for this bundle on this Node, beside it: trusted as the bundle is, so only a
 * file of the bundle's owner that no one else may write (in an image, both belong to root).
 */
function readSeed(bundle: string, source: Buffer, key: string): Buffer | undefined {
  let b: Stats;
  try {
    b = statSync(bundle);
  } catch {
    return undefined;
  }
  const file = join(dirname(bundle), seedFileName(thisNode(), source));
  return readCacheFile(file, key, (st) => st.uid === b.uid && (st.mode & 0o022) === 0);
}

/**
 * Writes the code V8 has compiled by now when it is more than the cache holds (`cachedBytes`), as
 * one file replaced whole: a concurrent start reads all or nothing. The code of an accepted cache is
 * part of it, so what a process compiles beyond it makes it grow, never shrink. Returns the bytes the
 * cache now holds. Never throws: it runs in a timer and at exit.
 */
function saveCache(c: CacheFile, script: Script, cachedBytes: number): number {
  try {
    const code = script.createCachedData();
    // Another process of this bundle (a --workers sibling) may have saved more meanwhile.
    if (code.length <= Math.max(cachedBytes, readOwnCache(c)?.length ?? 0)) return cachedBytes;
    writeCacheFile(c.file, c.key, code, 0o600);
    removeEarlierBuilds(c.file);
    return code.length;
  } catch {
    // No cache: the next start compiles, as this one did.
    return cachedBytes;
  }
}

/** Other builds' files of this bundle on this Node (caches, guards, marks), and temporary files of saves that died. */
function removeEarlierBuilds(file: string): void {
  const dir = dirname(file);
  const name = basename(file);
  const where = name.split('-')[0];
  try {
    for (const f of readdirSync(dir)) {
      const stale = f.startsWith(`${where}-`) && (!f.startsWith(name) || (f.endsWith('.tmp') && !f.endsWith(`.${process.pid}.tmp`)));
      if (stale) rmSync(join(dir, f), { force: true });
    }
  } catch {
    // Left for the next save.
  }
}

/** Whether process `pid` is gone (or is this one: a restarted container's process has its predecessor's pid). */
function gone(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/**
 * Our cache, else the build's. V8 aborts the process on some damaged caches that pass the checksum
 * (a serializer bug, a writer with our uid). Each process reading one leaves a guard file named by
 * its pid until the read is over: a guard of a process that is gone means it died reading, and this
 * start goes without any cache and saves its own, and the build's is not read again here (a mark),
 * instead of crashing every start. Siblings (--workers) reading at once are alive: not a crash.
 * Without a directory of ours there is no guard, so no cache.
 */
function guardedLoad(c: CacheFile | undefined, seed: () => Buffer | undefined): { cachedData?: Buffer; seeded?: boolean; done(): void } {
  const none = { done() {} };
  if (!c) return none;
  const guards = `${basename(c.file)}.loading.`;
  const noSeed = `${c.file}.noseed`;
  try {
    const dir = dirname(c.file);
    const crashed = readdirSync(dir).filter((f) => f.startsWith(guards) && gone(Number(f.slice(guards.length))));
    if (crashed.length > 0) {
      rmSync(c.file, { force: true });
      writeFileSync(noSeed, '', { mode: 0o600 });
      for (const f of crashed) rmSync(join(dir, f), { force: true });
      return none;
    }
    const own = readOwnCache(c);
    const cachedData = own ?? (existsSync(noSeed) ? undefined : seed());
    if (!cachedData) return none;
    const guard = `${c.file}.loading.${process.pid}`;
    writeFileSync(guard, '', { mode: 0o600 });
    const done = () => {
      try {
        rmSync(guard, { force: true });
      } catch {
        // The guard stays: the next start goes without the cache once.
      }
    };
    return { cachedData, seeded: !own, done };
  } catch {
    return none;
  }
}

/** Compiles the bundle (with a cache where there is one) and arranges the saves; the source buffer is not kept. */
function compile(bundle: string): Script {
  const bytes = readFileSync(bundle);
  const cache = cacheFileFor(bundle, bytes);
  const load = guardedLoad(cache, () => (cache ? readSeed(bundle, bytes, cache.key) : undefined));
  const script = new Script(wrappedSource(bytes), {
    filename: bundle,
    cachedData: load.cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  load.done();
  if (cache) {
    let cachedBytes = load.cachedData && !script.cachedDataRejected ? load.cachedData.length : 0;
    // Without a cache of ours, a server killed later still leaves its start's code (beyond the build's:
    // its start ran no etcd, no kube clients); at exit (SIGTERM's shutdown too) whatever was compiled
    // beyond the cache, e.g. after one that an early exit (--help) wrote.
    if (cachedBytes === 0 || load.seeded) setTimeout(() => { cachedBytes = saveCache(cache, script, cachedBytes); }, SAVE_AFTER_MS).unref();
    process.once('exit', () => saveCache(cache, script, cachedBytes));
  }
  return script;
}

const bundle = join(dirname(fileURLToPath(import.meta.url)), BUNDLE_NAME);
const run = compile(bundle).runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
const module = { exports: {} };
run(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
