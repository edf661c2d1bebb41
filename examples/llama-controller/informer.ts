// A list+watch cache of llamas (client-node's ListWatch) that keeps going. ListWatch itself relists
// after 410 Gone (an expired resourceVersion, as an ERROR event or as the watch's HTTP answer) and
// re-watches when the server closes the stream; on any other failure (a LIST that fails, a watch
// refused with 403/503, a connection error) it stops and reports an error, so it is restarted here
// with exponential backoff.
import { KubeConfig, ListWatch, Watch, type ObjectCache } from '@kubernetes/client-node';
import { exponentialBackoff } from './backoff.js';
import type { LlamaApi } from './api.js';
import type { Llama } from './llama.js';
import type { Logger } from './log.js';

export interface LlamaHandlers {
  upsert(l: Llama): void;
  remove(l: Llama): void;
}

export interface LlamaInformer {
  cache: ObjectCache<Llama>;
  /** Resolves after the first successful LIST (the cache is complete). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Errors in a row that are spaced out by at least this much start the backoff over. */
const HEALTHY_MS = 60_000;

export function llamaInformer(kc: KubeConfig, api: LlamaApi, handlers: LlamaHandlers, log: Logger): LlamaInformer {
  let listed = false;
  let onFirstList: () => void = () => {};
  const firstList = new Promise<void>((r) => (onFirstList = r));
  // The informer's LIST: its success is also the sign that the cache is whole.
  const list = async () => {
    const l = await api.list();
    log.info('listed llamas', { count: l.items.length, resourceVersion: l.metadata?.resourceVersion });
    if (!listed) { listed = true; onFirstList(); }
    return l;
  };
  const lw = new ListWatch<Llama>(api.watchPath, new Watch(kc), list, false);
  const backoff = exponentialBackoff(500, 30_000);
  let stopped = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let lastError = 0;

  lw.on('add', handlers.upsert);
  lw.on('update', handlers.upsert);
  lw.on('delete', handlers.remove);
  lw.on('connect', () => log.debug('watch (re)connecting', { path: api.watchPath, resourceVersion: lw.latestResourceVersion() || undefined }));
  lw.on('error', (err: unknown) => {
    if (stopped) return;
    const now = Date.now();
    if (now - lastError > HEALTHY_MS) backoff.reset();
    lastError = now;
    const delayMs = backoff.next();
    log.warn('list/watch failed; restarting', { error: err, delayMs, attempt: backoff.attempts });
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (!stopped) void lw.start().catch((e: unknown) => log.error('informer restart failed', { error: e }));
    }, delayMs);
  });

  return {
    cache: lw,
    async start() {
      stopped = false;
      void lw.start().catch((e: unknown) => log.error('informer start failed', { error: e }));
      await firstList;
    },
    async stop() {
      stopped = true;
      if (restartTimer) clearTimeout(restartTimer);
      await lw.stop();
    },
  };
}
