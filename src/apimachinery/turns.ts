// Work that fans out on one thread (a watch event to thousands of watchers: matching, encoding, TLS
// writes; a thousand LIST responses resumed by one socket write; a deletecollection's deletes) shares one
// budget per turn of the event loop: each piece asks whether the turn is spent and,
// if so, continues in the next turn, so /livez and other requests are served in between. Upstream runs
// the same work on goroutines across cores; here the bound is per turn, whatever the watcher count.

/** How long fanned-out work may hold the event loop in one turn. */
export const TURN_BUDGET_MS = 10;

/** When the current turn's shared work began; undefined between turns. */
let turnStart: number | undefined;
const endTurn = () => { turnStart = undefined; };

/** Whether this turn's shared budget is used up (the first call of a turn starts its clock). */
export function turnSpent(budgetMs = TURN_BUDGET_MS): boolean {
  const now = performance.now();
  if (turnStart === undefined) {
    turnStart = now;
    // Runs before anything that yields after this call: the next turn starts with a fresh budget.
    setImmediate(endTurn);
    return false;
  }
  return now - turnStart >= budgetMs;
}

/**
 * Undefined when this turn's budget has room: go on at once. Otherwise a promise of a later turn with room.
 * Each waiter asks again in its own immediate and works in the microtasks right after it, before the next
 * one asks: deciding for many waiters before any of them worked would let them all through at once.
 */
export function waitForTurn(budgetMs = TURN_BUDGET_MS): Promise<void> | undefined {
  if (!turnSpent(budgetMs)) return undefined;
  return new Promise((resolve) => {
    const retry = () => { if (turnSpent(budgetMs)) setImmediate(retry); else resolve(); };
    setImmediate(retry);
  });
}
