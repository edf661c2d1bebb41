// V8 code-cache files of the bundle, shared by the entry (src/bootstrap.ts), which reads and writes
// them at run time, and the build (scripts/seedCodeCache.ts), which ships one. Nothing here may
// import the server (the entry compiles it only after the cache is in place).
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, readFileSync, renameSync, rmSync, type Stats, writeFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';

/** The server's bundle, beside the entry (scripts/bundle.ts). */
export const BUNDLE_NAME = 'farm-apiserver.cjs';
/** A cache file larger than this is not ours to read (ours are ~3 MB). */
const MAX_CACHE_BYTES = 256 * 1024 * 1024;

// The script V8 compiles is the bundle inside this wrapper. "use strict": the ES modules the bundle
// was made of were strict (esbuild's banner line would come before the directive it writes).
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) {"use strict";';
const WRAPPER_TAIL = '\n})';

/**
 * The source V8 compiles. esbuild escapes non-ASCII in code (charset ascii); only comments keep
 * UTF-8, which latin1 merely misspells. V8 then keeps 6.6 MB of one-byte source (lazy functions
 * compile from it), not 13 MB.
 */
export const wrappedSource = (bundle: Buffer): string => `${WRAPPER_HEAD}${bundle.toString('latin1')}${WRAPPER_TAIL}`;

export const shortHash = (parts: unknown[]): string => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);

/** The Node and V8 that compile: code compiled by another is not theirs to run. */
export interface NodeIdentity {
  version: string;
  arch: string;
  v8: string;
}

export const thisNode = (): NodeIdentity => ({ version: process.version, arch: process.arch, v8: process.versions.v8 });

export const nodeKey = (n: NodeIdentity): string => shortHash([n.version, n.arch, n.v8]);

/**
 * What V8 compiles, wrapper included: V8 itself checks only the source's length, and would run
 * another build's (or another wrapper's) code of the same length. CRC-32 and length of the bytes of
 * wrappedSource (~2 ms for the 6 MB bundle; it is read anyway to compile).
 */
export function sourceKey(bundle: Buffer): string {
  const crc = crc32(WRAPPER_TAIL, crc32(bundle, crc32(WRAPPER_HEAD)));
  return `${crc.toString(16).padStart(8, '0')}${(WRAPPER_HEAD.length + bundle.length + WRAPPER_TAIL.length).toString(16)}`;
}

/** The cache made at build time, beside the bundle: `farm-apiserver-<node>-<source>.v8`. */
export const seedFileName = (node: NodeIdentity, bundle: Buffer): string => `farm-apiserver-${nodeKey(node)}-${sourceKey(bundle)}.v8`;

/** Whether `name` is a build-time cache of a bundle (of any build, on any Node). */
export const isSeedFileName = (name: string): boolean => /^farm-apiserver-[0-9a-f]{16}-[0-9a-f]+\.v8$/.test(name);

// A file: CRC-32 of the rest, the key's length (1 byte), the source key, the code. The key inside
// makes a renamed file of another build no cache; the CRC a damaged one (V8 checks its header but
// not its payload in release builds, and some damage crashes it).
const HEAD_BYTES = 5;

/**
 * The code in `file` if it is a regular file (not a FIFO, whose read would block the start) that
 * `trusted` accepts, made for the source `key`, with a matching CRC-32.
 */
export function readCacheFile(file: string, key: string, trusted: (st: Stats) => boolean): Buffer | undefined {
  let data: Buffer;
  try {
    const st = lstatSync(file);
    if (!st.isFile() || st.size > MAX_CACHE_BYTES || !trusted(st)) return undefined;
    data = readFileSync(file);
  } catch {
    return undefined;
  }
  if (data.length <= HEAD_BYTES || data.readUInt32BE(0) !== crc32(data.subarray(4))) return undefined;
  const keyEnd = HEAD_BYTES + data[4];
  return data.toString('latin1', HEAD_BYTES, keyEnd) === key ? data.subarray(keyEnd) : undefined;
}

/** Writes the code whole under a temporary name, then renames: a reader sees all or nothing. */
export function writeCacheFile(file: string, key: string, code: Buffer, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const rest = Buffer.concat([Buffer.from([key.length]), Buffer.from(key, 'latin1'), code]);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(crc32(rest));
  try {
    writeFileSync(tmp, Buffer.concat([head, rest]), { mode });
    chmodSync(tmp, mode); // the umask could narrow it: a build's cache is for another user to read
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
