// List+watch of one core-API collection, kept in sync like client-go's reflector: resume from the
// last resourceVersion, relist on 410, back off on errors, report whether the view is in sync.
import type { FastifyBaseLogger } from 'fastify';
import { UpstreamError, type Upstream } from './client.js';

export type RawObject = Record<string, unknown> & { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };

export interface ReflectorHandlers {
  /** A fresh list replaces everything known (after start, a 410, or an outage). */
  replace(items: RawObject[], resourceVersion: string): void;
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: RawObject): void;
  /** Upstream progress without changes (bookmarks). */
  progress?(resourceVersion: string): void;
}

export interface ReflectorOptions {
  purpose: string;
  /** Collection path, e.g. /api/v1/pods; may carry a query such as a fieldSelector. */
  path: string;
  log: FastifyBaseLogger;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Items per list page (client-go's pager uses 500). */
  pageSize?: number;
}

class Expired extends Error {}

export class Reflector {
  private abort = new AbortController();
  private running = false;
  private syncedNow = false;
  private lastErrorText: string | undefined;
  private rv = '';
  private firstSync: Promise<void>;
  private resolveFirstSync!: () => void;

  constructor(private readonly upstream: Upstream, private readonly opts: ReflectorOptions, private readonly handlers: ReflectorHandlers) {
    this.firstSync = new Promise((r) => { this.resolveFirstSync = r; });
  }

  get synced(): boolean { return this.syncedNow; }
  get lastError(): string | undefined { return this.lastErrorText; }
  get resourceVersion(): string { return this.rv; }
  /** Resolves after the first successful list. */
  waitForSync(): Promise<void> { return this.firstSync; }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  stop(): void {
    this.running = false;
    this.abort.abort();
  }

  private sep(): string { return this.opts.path.includes('?') ? '&' : '?'; }

  private async loop(): Promise<void> {
    const min = this.opts.minBackoffMs ?? 200;
    const max = this.opts.maxBackoffMs ?? 10_000;
    let backoff = min;
    let needList = true;
    while (this.running) {
      try {
        if (needList) {
          await this.list();
          needList = false;
          backoff = min;
        }
        const started = Date.now();
        const events = await this.watch();
        // A stream that ended normally is reopened from the last RV, but one that ended at once with
        // nothing in it is treated as a failure (client-go does the same), so it cannot spin.
        if (events === 0 && Date.now() - started < 1000) {
          await sleep(backoff, this.abort.signal);
          backoff = Math.min(backoff * 2, max);
        } else {
          backoff = min;
        }
      } catch (e) {
        if (!this.running) break;
        if (e instanceof Expired) {
          this.opts.log.info({ purpose: this.opts.purpose }, 'upstream watch expired; relisting');
          needList = true;
          continue;
        }
        this.lastErrorText = (e as Error).message;
        if (this.syncedNow) this.opts.log.warn({ purpose: this.opts.purpose, err: this.lastErrorText }, 'upstream list/watch failed; backing off');
        this.syncedNow = false;
        needList = true;
        await sleep(backoff, this.abort.signal);
        backoff = Math.min(backoff * 2, max);
      }
    }
  }

  /** Pages (500 by default, like client-go's pager), so a large first sync is many short requests. */
  private async list(): Promise<void> {
    const items: RawObject[] = [];
    let cont = '';
    let rv = '';
    do {
      const page = `${this.opts.path}${this.sep()}limit=${this.opts.pageSize ?? 500}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
      const res = await this.upstream.request<{ items?: RawObject[]; metadata?: { resourceVersion?: string; continue?: string } }>(this.opts.purpose, 'GET', page, undefined, 60_000);
      if (res.status !== 200 || !res.body) throw new UpstreamError(res.status, `list ${this.opts.path}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      for (const item of res.body.items ?? []) items.push(item);
      rv = res.body.metadata?.resourceVersion ?? rv;
      cont = res.body.metadata?.continue ?? '';
    } while (cont);
    this.rv = rv;
    this.handlers.replace(items, this.rv);
    this.syncedNow = true;
    this.lastErrorText = undefined;
    this.resolveFirstSync();
  }

  /** One watch stream; resolves with the number of events it carried. */
  private async watch(): Promise<number> {
    const timeout = 240 + Math.floor(Math.random() * 120);
    const path = `${this.opts.path}${this.sep()}watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.rv)}&timeoutSeconds=${timeout}`;
    let expired = false;
    let events = 0;
    await this.upstream.watch(this.opts.purpose, path, (type, object) => {
      const raw = object as RawObject;
      events++;
      if (type === 'ERROR') {
        const code = (object as { code?: number }).code;
        if (code === 410) expired = true;
        else throw new UpstreamError(code ?? 0, `watch error: ${JSON.stringify(object).slice(0, 300)}`);
        return;
      }
      const rv = raw.metadata?.resourceVersion;
      if (rv) this.rv = rv;
      if (type === 'BOOKMARK') this.handlers.progress?.(this.rv);
      else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') this.handlers.event(type, raw);
    }, this.abort.signal);
    if (expired) throw new Expired();
    return events;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
