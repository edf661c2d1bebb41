// Delivers each change to the watchers that existed when it was applied, in order, a turn's budget at a
// time (apimachinery/turns.ts): with thousands of watchers and costly selectors one change can take
// seconds of matching, which must not hold the event loop (upstream's cacher dispatches on goroutines).
import { turnSpent } from '../../apimachinery/turns.js';
import type { Change } from '../interfaces.js';

/** What the fan-out needs of a watcher: its creation order and a non-blocking offer. */
export interface FanoutTarget {
  /** Watchers are numbered in the order they are made (the set iterates in that order too). */
  readonly seq: number;
  offer(change: Change): void;
}

/** A change for the watchers numbered up to `lastSeq`, or something to run once every earlier change is delivered. */
type Step = { change: Change; lastSeq: number } | { then: () => void };

/**
 * Writers of the process wait while more than `lagLimit` changes are still to be offered (room()), as
 * upstream's cacher blocks its producer once its incoming channel is full; a producer that cannot wait
 * (changes from etcd or kube-apiserver) makes the fan-out ignore its budget past twice that, so what it
 * holds stays within what the cache's history keeps anyway.
 */
export class Fanout<W extends FanoutTarget> {
  private queue: (Step | undefined)[] = [];
  private head = 0;
  private roomWaiters: (() => void)[] = [];
  /** Where the change at `head` has got to among the watchers. */
  private cursor: Iterator<W> | undefined;
  private scheduled = false;

  constructor(private readonly watchers: Set<W>, private readonly budgetMs: number, private readonly lagLimit: number) {}

  /** Steps still queued (changes to offer, and what waits behind them). */
  get lag(): number { return this.queue.length - this.head; }

  /** Resolves once at most `lagLimit` steps are queued: a writer waits here before it commits. */
  room(): Promise<void> {
    if (this.lag <= this.lagLimit && this.roomWaiters.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** Queues `change` for the watchers numbered up to `lastSeq`; delivery starts after the current callback. */
  push(change: Change, lastSeq: number): void {
    this.enqueue({ change, lastSeq });
  }

  /** Runs `then` once every change queued so far was offered (at once when none is in flight). */
  afterQueued(then: () => void): void {
    if (this.head === this.queue.length) then();
    else this.enqueue({ then });
  }

  /** Drops what is queued (every watcher was closed: a cache reset); what waits for it runs now. */
  clear(): void {
    const waiting = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.cursor = undefined;
    for (const s of waiting) if (s && 'then' in s) s.then();
    this.letWritersIn();
  }

  /** As many waiting writers as there is room for (each commits a change). */
  private letWritersIn(): void {
    let room = this.lagLimit - this.lag;
    while (room-- > 0 && this.roomWaiters.length) this.roomWaiters.shift()!();
  }

  private enqueue(step: Step): void {
    this.queue.push(step);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  /** Watchers offered a change in this run: one at least per run, whoever spent the turn's budget before it. */
  private offeredThisRun = 0;

  private readonly run = (): void => {
    this.scheduled = false;
    this.offeredThisRun = 0;
    while (this.head < this.queue.length) {
      const step = this.queue[this.head]!;
      if ('change' in step && !this.deliver(step.change, step.lastSeq)) {
        this.scheduled = true;
        setImmediate(this.run);
        return;
      }
      this.queue[this.head++] = undefined;
      if ('then' in step) step.then();
      if (this.roomWaiters.length) this.letWritersIn();
      // Under a steady stream of writes the queue may never empty: drop the delivered front now and then.
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
    }
    this.queue = [];
    this.head = 0;
    this.letWritersIn();
  };

  /** Offers the change to the watchers after the cursor; false when the turn's budget ran out first. */
  private deliver(change: Change, lastSeq: number): boolean {
    this.cursor ??= this.watchers.values();
    for (;;) {
      if (this.offeredThisRun > 0 && turnSpent(this.budgetMs) && this.lag <= 2 * this.lagLimit) return false;
      const next = this.cursor.next();
      // Watchers made after the change started from a state that holds it already.
      if (next.done || next.value.seq > lastSeq) break;
      next.value.offer(change);
      this.offeredThisRun++;
    }
    this.cursor = undefined;
    return true;
  }
}
