// SharedRead against generated schedules of arriving readers and answered (or failed) calls: every
// reader gets the answer of a call sent no earlier than it arrived, at most one call is in flight,
// readers that arrive during one call share the next, and a failed call fails only its own readers.
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SharedRead } from '../../src/storage/etcd3/sharedRead.js';

type Step = 'read' | 'answer' | 'fail';

interface Call { sentAt: number; settle: (ok: boolean) => void }
interface Reader { arrivedAt: number; outcome?: { ok: true; sentAt: number } | { ok: false; sentAt: number } }

describe('SharedRead', () => {
  it('gives each reader a call sent after it arrived, one call at a time, shared by the readers that waited', async () => {
    const stepArb = fc.constantFrom<Step>('read', 'read', 'read', 'answer', 'answer', 'fail');
    await fc.assert(fc.asyncProperty(fc.array(stepArb, { maxLength: 80 }), async (steps) => {
      let now = 0;
      const calls: Call[] = [];
      const open: Call[] = [];
      const shared = new SharedRead<number>(() => new Promise<number>((resolve, reject) => {
        const call: Call = { sentAt: now, settle: (ok) => (ok ? resolve(call.sentAt) : reject(new Error(String(call.sentAt)))) };
        calls.push(call);
        open.push(call);
      }));
      const readers: Reader[] = [];
      const read = () => {
        const r: Reader = { arrivedAt: now };
        readers.push(r);
        shared.read().then(
          (sentAt) => { r.outcome = { ok: true, sentAt }; },
          (e: Error) => { r.outcome = { ok: false, sentAt: Number(e.message) }; },
        );
      };
      const settleOldest = async (ok: boolean) => {
        const call = open.shift();
        if (!call) return;
        call.settle(ok);
        for (let i = 0; i < 4; i++) await tick();
      };
      for (const step of [...steps, ...Array<Step>(steps.length + 1).fill('answer')]) {
        now++;
        if (step === 'read') read();
        else await settleOldest(step === 'answer');
        assert.ok(open.length <= 1, `${open.length} calls in flight`);
      }
      for (const r of readers) {
        assert.ok(r.outcome, 'a reader was never answered');
        assert.ok(r.outcome.sentAt >= r.arrivedAt, `reader at ${r.arrivedAt} got a call sent at ${r.outcome.sentAt}`);
      }
      // Readers that arrived while one call was in flight (none of them sent it) share one next call.
      for (const c of calls) {
        const during = readers.filter((r) => r.arrivedAt > c.sentAt && r.outcome && r.outcome.sentAt > c.sentAt);
        const firstAfter = calls.find((d) => d.sentAt > c.sentAt);
        for (const r of during) if (firstAfter && r.arrivedAt < firstAfter.sentAt) assert.equal(r.outcome?.sentAt, firstAfter.sentAt);
      }
      assert.ok(calls.length <= readers.length);
    }), { seed: 7, numRuns: 300 });
  });

  it('sends a new call for a reader that arrives after the last one was answered', async () => {
    let sent = 0;
    const shared = new SharedRead(async () => ++sent);
    assert.equal(await shared.read(), 1);
    assert.equal(await shared.read(), 2);
    const [a, b, c] = await Promise.all([shared.read(), shared.read(), shared.read()]);
    assert.deepEqual([a, b, c], [3, 4, 4]);
  });
});
