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
 * The bundle's content: V8 checks only the source's length, and would run another build's code of
 * the same length. CRC-32 and length (~2 ms for the 6 MB bundle; it is read anyway to compile).
 */
export const contentKey = (source: Buffer): string => `${crc32(source).toString(16).padStart(8, '0')}${source.length.toString(16)}`;

/** The cache made at build time, beside the bundle: `farm-apiserver-<node>-<content>.v8`. */
export const seedFileName = (node: NodeIdentity, source: Buffer): string => `farm-apiserver-${nodeKey(node)}-${contentKey(source)}.v8`;

/** Whether `name` is a build-time cache of a bundle (of any build, on any Node). */
export const isSeedFileName = (name: string): boolean => /^farm-apiserver-[0-9a-f]{16}-[0-9a-f]+\.v8$/.test(name);

/**
 * The code in `file` if it is a regular file (not a FIFO, whose read would block the start) that
 * `trusted` accepts, with a matching CRC-32. V8 checks a cache's header but not its payload (release
 * builds), so a damaged file could crash every start.
 */
export function readCacheFile(file: string, trusted: (st: Stats) => boolean): Buffer | undefined {
  let data: Buffer;
  try {
    const st = lstatSync(file);
    if (!st.isFile() || st.size > MAX_CACHE_BYTES || !trusted(st)) return undefined;
    data = readFileSync(file);
  } catch {
    return undefined;
  }
  const code = data.subarray(4);
  return data.length > 4 && data.readUInt32BE(0) === crc32(code) ? code : undefined;
}

/** Writes `code` (a CRC-32, then the code) whole under a temporary name, then renames: a reader sees all or nothing. */
export function writeCacheFile(file: string, code: Buffer, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const head = Buffer.alloc(4);
  head.writeUInt32BE(crc32(code));
  try {
    writeFileSync(tmp, Buffer.concat([head, code]), { mode });
    chmodSync(tmp, mode); // the umask could narrow it: a build's cache is for another user to read
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
