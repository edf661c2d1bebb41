// Work that fans out on one thread (a watch event to thousands of watchers: matching, encoding, TLS
// writes) shares one budget per turn of the event loop: each piece asks whether the turn is spent and,
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

/** Resolves in the next turn, after the I/O that is waiting (a setImmediate). */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
