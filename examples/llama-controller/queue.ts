// A work queue of llama keys with client-go's guarantees: a key is queued at most once, never
// processed by two workers at once (a key added while it is processed runs again after), and a
// failing key comes back after a per-key exponential backoff, forgotten on success.
import { exponentialBackoff, type Backoff } from './backoff.js';

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private readonly failures = new Map<string, Backoff>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;

  constructor(private readonly retryBaseMs = 250, private readonly retryMaxMs = 60_000) {}

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it again
    const waiter = this.waiters.shift();
    if (waiter) { this.dirty.delete(key); this.processing.add(key); waiter(key); } else this.queue.push(key);
  }

  /** Adds the key after a delay (an earlier pending delay for it wins). */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown || this.delayed.has(key)) return;
    this.delayed.set(key, setTimeout(() => { this.delayed.delete(key); this.add(key); }, ms));
  }

  /** Requeues a failed key after its backoff; returns the delay. */
  retry(key: string): number {
    let b = this.failures.get(key);
    if (!b) this.failures.set(key, (b = exponentialBackoff(this.retryBaseMs, this.retryMaxMs)));
    const ms = b.next();
    this.addAfter(key, ms);
    return ms;
  }

  /** The key succeeded: its next failure starts the backoff over. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to process; undefined once shut down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((r) => this.waiters.push(r));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) { this.dirty.delete(key); this.add(key); }
  }

  get length(): number { return this.queue.length; }

  shutDown(): void {
    this.shuttingDown = true;
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
