// The bundle's entry point (dist/farm-apiserver.js): where Node can (22.8+, so the image's 24), V8's
// compiled code of the server's modules is kept on disk between starts, so a restart does not compile
// ~5 MB of JavaScript again (60-100 ms of a Node 24 start). NODE_COMPILE_CACHE names the directory
// (Node then turns it on itself); NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node writes the cache at
// exit (SIGTERM's shutdown too) and here 2 s after the start, so a server killed later keeps it.
// It has to be on before main's modules load: hence this module and the dynamic import.
import { lstatSync, mkdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { enableCompileCache, flushCompileCache } = nodeModule as { enableCompileCache?: (dir?: string) => unknown; flushCompileCache?: () => void };

/**
 * <tmpdir>/node-compile-cache when it is a directory of ours that only we can write: the cache is
 * code we run. Made without `recursive` (which loops forever where mkdir answers ENOENT under an
 * existing parent, e.g. TMPDIR=/proc, as Node's own cache-dir creation does); none on a read-only
 * root file system.
 */
function ownCacheDir(): string | undefined {
  const dir = join(tmpdir(), 'node-compile-cache');
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  const st = lstatSync(dir);
  return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0 ? dir : undefined;
}

if (enableCompileCache && !process.env.NODE_COMPILE_CACHE && !process.env.NODE_DISABLE_COMPILE_CACHE) {
  try {
    const dir = ownCacheDir();
    if (dir) enableCompileCache(dir);
  } catch {
    // No cache: every start compiles, as on Node 20.
  }
}
await import('./main.js');
// main() runs on; SIGKILL and OOM skip the write at exit (flushCompileCache: Node 22.10+, a no-op with the cache off).
setTimeout(() => flushCompileCache?.(), 2_000).unref();
