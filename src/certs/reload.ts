// Hot reload of the serving certificate.
//
// The parent directories are watched rather than the files: editors, cert-manager, `mv` and
// Kubernetes secret volumes (which swap a `..data` symlink) replace files by rename, after which
// a watch on the old inode never fires again. Any event in the directory schedules a debounced
// re-read; the pair is applied only when its content changed and it passes checkServingPair
// (PEM that parses, a key that matches the certificate; an empty file half-way through a copy is refused).
// A slow poll backs up fs.watch for filesystems without inotify (NFS, files read through mirrord).

import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { checkServingPair, type ServingPairNames } from './servingPair.js';

export interface ServingCertFiles {
  certFile: string;
  keyFile: string;
}

export interface ServingCertPem {
  cert: string;
  key: string;
}

export interface WatchServingCertOptions {
  /** The pair already being served (read at start-up): a change after that read is applied. */
  initial?: ServingCertPem;
  /** Quiet period after the last filesystem event before re-reading. Default 200 ms. */
  debounceMs?: number;
  /** Re-read interval independent of fs.watch; 0 disables. Default 10 000 ms. */
  pollIntervalMs?: number;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/** Throws if the pair is unusable (bad or empty PEM, or a key not matching the certificate). */
export function validateServingPair(pem: ServingCertPem, names: ServingPairNames = { certFile: 'the certificate', keyFile: 'the key' }): void {
  checkServingPair(pem, names);
}

/**
 * Watch the serving cert/key; call `apply` with the new valid pair whenever their content changes.
 * The content present when watching starts is taken as already applied. Invalid pairs are reported
 * to `onError` (once per distinct bad content) and the previous pair stays in use.
 * Returns a function that stops watching; after it returns, `apply` is never called again.
 */
export function watchServingCert(
  files: ServingCertFiles,
  apply: (pem: ServingCertPem) => void,
  onError: (e: Error) => void,
  options: WatchServingCertOptions = {},
): () => void {
  const debounceMs = options.debounceMs ?? 200;
  const pollIntervalMs = options.pollIntervalMs ?? 10_000;
  const certFile = resolve(files.certFile);
  const keyFile = resolve(files.keyFile);

  let stopped = false;
  let running = false;
  let rerun = false;
  let timer: NodeJS.Timeout | undefined;
  let lastApplied: string | undefined;
  let lastBad: string | undefined;

  try {
    lastApplied = options.initial
      ? `${options.initial.cert}\0${options.initial.key}`
      : `${readFileSync(certFile, 'utf8')}\0${readFileSync(keyFile, 'utf8')}`;
  } catch {
    lastApplied = undefined; // the first readable pair will be applied
  }

  const report = (key: string, e: unknown): void => {
    if (key === lastBad) return;
    lastBad = key;
    const err = asError(e);
    onError(new Error(`serving certificate reload (${certFile}, ${keyFile}): ${err.message.split('\n')[0]}`, { cause: err }));
  };

  const reload = async (): Promise<void> => {
    if (stopped) return;
    if (running) {
      rerun = true;
      return;
    }
    running = true;
    try {
      let pem: ServingCertPem;
      try {
        const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
        pem = { cert, key };
      } catch (e) {
        report(`read:${asError(e).message}`, e);
        return;
      }
      const content = `${pem.cert}\0${pem.key}`;
      if (stopped || content === lastApplied) return;
      try {
        validateServingPair(pem, { certFile, keyFile });
        apply(pem);
      } catch (e) {
        report(`content:${content}`, e);
        return;
      }
      lastApplied = content;
      lastBad = undefined;
    } finally {
      running = false;
      if (rerun && !stopped) {
        rerun = false;
        schedule();
      }
    }
  };

  function schedule(): void {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void reload();
    }, debounceMs);
    timer.unref();
  }

  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(certFile), dirname(keyFile)])) {
    try {
      const w = watch(dir, { persistent: false }, () => schedule());
      w.on('error', (e) => report(`watch:${dir}:${e.message}`, e));
      watchers.push(w);
    } catch (e) {
      report(`watch:${dir}:${asError(e).message}`, e); // polling still covers it
    }
  }

  const poll = pollIntervalMs > 0 ? setInterval(() => void reload(), pollIntervalMs) : undefined;
  poll?.unref();

  return () => {
    if (stopped) return;
    stopped = true;
    if (timer) clearTimeout(timer);
    if (poll) clearInterval(poll);
    for (const w of watchers) w.close();
  };
}
