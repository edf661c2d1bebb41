// The bundle's entry point (dist/farm-apiserver.js). It runs the server's bundle (farm-apiserver.cjs,
// one CommonJS script) with V8's compiled code of an earlier start, so a start does not compile the
// same ~6 MB of JavaScript again (CPU per start 250 -> 170 ms standalone), on every Node (20 has no
// module.enableCompileCache, and Node's own cache is per ES module file). NODE_COMPILE_CACHE names
// the place, NODE_DISABLE_COMPILE_CACHE=1 turns it off, as for Node's own cache.
// Nothing here may import the server: its modules would compile before the cache is in place.
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, Script } from 'node:vm';
import { crc32 } from 'node:zlib';

/** The server's bundle, beside this file (scripts/bundle.ts). */
const BUNDLE_NAME = 'farm-apiserver.cjs';
/** A cache file larger than this is not ours to read (ours are ~3 MB). */
const MAX_CACHE_BYTES = 256 * 1024 * 1024;
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

const hash = (parts: unknown[]) => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);

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

/**
 * The cache file for this bundle on this Node: `<where>-<which>.v8`, where = the bundle's path and the
 * Node that compiled it, which = the bundle's content (V8 itself checks only the source's length, and
 * runs another build's code of the same length; saving removes the other builds' files).
 */
function cacheFileFor(bundle: string, source: Buffer): string | undefined {
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  try {
    const dir = cacheDir();
    if (!dir) return undefined;
    const where = hash([bundle, process.version, process.arch, process.versions.v8]);
    return join(dir, `${where}-${crc32(source).toString(16).padStart(8, '0')}${source.length.toString(16)}.v8`);
  } catch {
    return undefined;
  }
}

/**
 * The file is a CRC-32 of the code, then the code. V8 checks a cache's header but not its payload
 * (release builds), so a damaged file could crash every start: one that fails the check is unused.
 */
function readCache(file: string | undefined): Buffer | undefined {
  let data: Buffer;
  try {
    if (!file) return undefined;
    // Not a FIFO (a read would block the start) nor anything but ours.
    const st = lstatSync(file);
    if (!st.isFile() || st.uid !== process.getuid?.() || st.size > MAX_CACHE_BYTES) return undefined;
    data = readFileSync(file);
  } catch {
    return undefined;
  }
  const code = data.subarray(4);
  return data.length > 4 && data.readUInt32BE(0) === crc32(code) ? code : undefined;
}

/**
 * Writes the code V8 has compiled by now when it is more than the cache holds (`cachedBytes`), whole
 * under a temporary name, then renamed: a concurrent start reads all or nothing. The code of an
 * accepted cache is part of it, so what a process compiles beyond it makes it grow, never shrink.
 * Returns the bytes the cache now holds. Never throws: it runs in a timer and at exit.
 */
function saveCache(file: string, script: Script, cachedBytes: number): number {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const code = script.createCachedData();
    // Another process of this bundle (a --workers sibling) may have saved more meanwhile.
    if (code.length <= Math.max(cachedBytes, readCache(file)?.length ?? 0)) return cachedBytes;
    const head = Buffer.alloc(4);
    head.writeUInt32BE(crc32(code));
    writeFileSync(tmp, Buffer.concat([head, code]), { mode: 0o600 });
    renameSync(tmp, file);
    removeEarlierBuilds(file);
    return code.length;
  } catch {
    // No cache: the next start compiles, as this one did.
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Left behind in our own directory.
    }
    return cachedBytes;
  }
}

/** Other builds' caches of this bundle on this Node, and temporary files of saves that died. */
function removeEarlierBuilds(file: string): void {
  const dir = dirname(file);
  const where = basename(file).split('-')[0];
  try {
    for (const f of readdirSync(dir)) {
      const stale = f.startsWith(`${where}-`) && f !== basename(file) && (f.endsWith('.v8') || (f.endsWith('.tmp') && !f.endsWith(`.${process.pid}.tmp`)));
      if (stale) rmSync(join(dir, f), { force: true });
    }
  } catch {
    // Left for the next save.
  }
}

/**
 * V8 aborts the process on some damaged caches that pass the checksum (a serializer bug, a writer
 * with our uid). A guard file stands while one is read: found at the next start, it means that start
 * died reading, and the cache goes instead of crashing every start. (A sibling reading at the same
 * moment costs one start without the cache.)
 */
function guardedLoad(file: string | undefined): { cachedData?: Buffer; done(): void } {
  const none = { done() {} };
  if (!file) return none;
  const guard = `${file}.loading`;
  try {
    if (existsSync(guard)) {
      rmSync(file, { force: true });
      rmSync(guard, { force: true });
      return none;
    }
    const cachedData = readCache(file);
    if (!cachedData) return none;
    writeFileSync(guard, '', { mode: 0o600 });
    const done = () => {
      try {
        rmSync(guard, { force: true });
      } catch {
        // The guard stays: the next start goes without the cache once.
      }
    };
    return { cachedData, done };
  } catch {
    return none;
  }
}

/** Compiles the bundle (with the cache where there is one) and arranges the saves; the source buffer is not kept. */
function compile(bundle: string): Script {
  const bytes = readFileSync(bundle);
  const cacheFile = cacheFileFor(bundle, bytes);
  const load = guardedLoad(cacheFile);
  // esbuild escapes non-ASCII in code (charset ascii); only comments keep UTF-8, which latin1 merely
  // misspells. V8 then keeps 6.6 MB of one-byte source (lazy functions compile from it), not 13 MB.
  // "use strict": the ES modules the bundle was made of were strict (esbuild's banner line would come
  // before the directive it writes).
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {"use strict";${bytes.toString('latin1')}\n})`, {
    filename: bundle,
    cachedData: load.cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  load.done();
  if (cacheFile) {
    let cachedBytes = load.cachedData && !script.cachedDataRejected ? load.cachedData.length : 0;
    // Without a cache, a server killed later still leaves its start's code; at exit (SIGTERM's shutdown
    // too) whatever was compiled beyond the cache, e.g. after one that an early exit (--help) wrote.
    if (cachedBytes === 0) setTimeout(() => { cachedBytes = saveCache(cacheFile, script, cachedBytes); }, SAVE_AFTER_MS).unref();
    process.once('exit', () => saveCache(cacheFile, script, cachedBytes));
  }
  return script;
}

const bundle = join(dirname(fileURLToPath(import.meta.url)), BUNDLE_NAME);
const run = compile(bundle).runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
const module = { exports: {} };
run(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
