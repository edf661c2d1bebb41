// Long writes (3 MiB bodies, objects with 200k finalizers) take hundreds of ms in stages: a Pacer
// lets other requests (and /livez) run between stages once a stage took long, so the event loop is
// held for one stage at a time, not for the whole write. Small writes never yield.

/** A stage shorter than this does not yield (a setImmediate costs more than it saves). */
const SLICE_MS = 10;

export class Pacer {
  private since = performance.now();

  /** `sliceMs`: how long a stage may hold the event loop (work no request waits for can take less). */
  constructor(private readonly sliceMs = SLICE_MS) {}

  async breathe(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}

/**
 * A Pacer shared by many operations within one turn of the event loop: past `sliceMs` since the turn's
 * first call, every caller waits for a later turn (after the loop has read the sockets again). One socket
 * write can resume hundreds of responses at once (1,000 LISTs on one HTTP/2 connection, each rendering its
 * next chunk); each is small, together they would hold the loop for hundreds of ms.
 */
export class TurnPacer {
  private since: number | undefined;

  constructor(private readonly sliceMs = SLICE_MS) {}

  /**
   * Undefined when this turn's slice has room: go on at once. Otherwise a promise of a later turn with room.
   * The caller does its work right after (no other await between): deciding for many callers before any of
   * them has worked would let them all through.
   */
  waitForRoom(): Promise<void> | undefined {
    if (this.hasRoom()) return undefined;
    return new Promise((resolve) => {
      // Each waiter asks in its own immediate, and works in the microtasks right after it, before the next asks.
      const retry = () => { if (this.hasRoom()) resolve(); else setImmediate(retry); };
      setImmediate(retry);
    });
  }

  private hasRoom(): boolean {
    const now = performance.now();
    if (this.since === undefined) {
      this.since = now;
      setImmediate(() => { this.since = undefined; });
      return true;
    }
    return now - this.since < this.sliceMs;
  }
}

/** The one TurnPacer of response bodies written a chunk at a time. */
export const responseTurns = new TurnPacer();
