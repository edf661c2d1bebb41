// Exponential backoff with jitter, as client-go's rate limiters and wait.Backoff do.
export interface Backoff {
  /** Delay before the next attempt (grows with each call). */
  next(): number;
  reset(): void;
  readonly attempts: number;
}

export function exponentialBackoff(baseMs: number, maxMs: number, jitter = 0.2): Backoff {
  let attempts = 0;
  return {
    next() {
      const raw = Math.min(maxMs, baseMs * 2 ** Math.min(attempts, 30));
      attempts++;
      return Math.round(raw * (1 + jitter * Math.random()));
    },
    reset() { attempts = 0; },
    get attempts() { return attempts; },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
