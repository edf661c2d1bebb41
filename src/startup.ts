// Start-up failures as one line naming what was being done and why ("cannot listen on
// 127.0.0.1:8443: address already in use"); the stack trace is for --log-level debug only.

export class StartupError extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
  }
}

const errnoWords: Record<string, string> = {
  ENOENT: 'no such file or directory', EACCES: 'permission denied', EPERM: 'operation not permitted',
  EROFS: 'read-only file system', ENOTDIR: 'not a directory', EISDIR: 'is a directory', EEXIST: 'file exists',
  EADDRINUSE: 'address already in use', EADDRNOTAVAIL: 'address not available on this machine', ENOSPC: 'no space left on device',
  ELOOP: 'too many levels of symbolic links', ENAMETOOLONG: 'file name too long', EMFILE: 'too many open files',
};

/**
 * The reason in a few words: the errno's meaning, else the first line of the message. A file error
 * names its file unless `context` (the sentence it will follow) already does.
 */
export function reasonOf(e: unknown, context = ''): string {
  const { code, path } = (e ?? {}) as NodeJS.ErrnoException;
  if (code && errnoWords[code]) return path && !context.includes(path) ? `${path}: ${errnoWords[code]}` : errnoWords[code];
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n')[0].trim() || 'unknown error';
}

/** Runs one start-up step; a failure becomes a StartupError "<what>: <reason>". */
export async function step<T>(what: string, run: () => Promise<T> | T): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof StartupError) throw e;
    throw new StartupError(`${what}: ${reasonOf(e, what)}`, e);
  }
}

/** What main() prints for a failure that ends the process: one line, plus the stack when debugging. */
export function startupFailure(e: unknown, debug: boolean): string {
  const line = e instanceof StartupError ? e.message : `start-up failed: ${reasonOf(e)}`;
  if (!debug) return `farm-apiserver: ${line}\n`;
  const cause = e instanceof StartupError ? e.cause : e;
  const stack = cause instanceof Error ? cause.stack : undefined;
  return `farm-apiserver: ${line}\n${stack ? `${stack}\n` : ''}`;
}
