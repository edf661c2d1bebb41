// waitForTurn (apimachinery/turns.ts): many operations sharing one turn of the event loop take at most its slice of work together
// (what 1,000 LIST responses resumed by one socket write do), and every one of them finishes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { waitForTurn } from '../../src/apimachinery/turns.js';

const SLICE_MS = 10;

/** Busy work, as rendering a chunk is. */
function work(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* spin */ }
}

test('property: operations sharing the turn\'s budget do at most a slice of work (plus one step) per turn, and all finish', async () => {
  await fc.assert(fc.asyncProperty(
    fc.record({ operations: fc.integer({ min: 1, max: 200 }), steps: fc.integer({ min: 1, max: 5 }), stepMs: fc.constantFrom(0.5, 1, 2, 4) }),
    async ({ operations, steps, stepMs }) => {
      fc.pre(operations * steps * stepMs <= 600);
      // Turns of the loop, counted by a chain of immediates as they come.
      let turnNo = 0;
      let ticking = true;
      const tick = () => { turnNo++; if (ticking) setImmediate(tick); };
      setImmediate(tick);
      const perTurn = new Map<number, number>();
      let done = 0;
      await Promise.all(Array.from({ length: operations }, async () => {
        for (let i = 0; i < steps; i++) {
          const room = waitForTurn(SLICE_MS);
          if (room) await room;
          work(stepMs);
          perTurn.set(turnNo, (perTurn.get(turnNo) ?? 0) + 1);
        }
        done++;
      }));
      ticking = false;
      assert.equal(done, operations);
      // Wall time decides, so a preempted process does fewer steps a turn, never more.
      const bound = Math.floor(SLICE_MS / stepMs) + 1;
      const most = Math.max(...perTurn.values());
      assert.ok(most <= bound, `${most} steps of ${stepMs} ms in one turn (bound ${bound})`);
    },
  ), { numRuns: 25 });
});
