// CounterSeries and HistogramSeries add to prom-client's own entries; whatever is observed through
// them must expose exactly what prom-client's public inc/observe expose, across resets and for
// values on, between and past the bucket bounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { CounterSeries, HistogramSeries } from '../../src/server/observability/metricSeries.js';

const BUCKETS = [0.005, 0.025, 0.1, 1, 10];
const labelSets = [{ verb: 'GET', code: '200' }, { verb: 'GET', code: '404' }, { verb: 'LIST', code: '200' }];

function pair() {
  const make = () => {
    const registry = new Registry();
    const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['verb', 'code'] as const, registers: [registry] });
    const histogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['verb', 'code'] as const, buckets: BUCKETS, registers: [registry] });
    return { registry, counter, histogram };
  };
  return { plain: make(), fast: make() };
}

type Step = { kind: 'inc' | 'observe'; set: number; value: number } | { kind: 'reset' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('inc' as const), set: fc.nat(labelSets.length - 1), value: fc.constant(1) }),
  fc.record({
    kind: fc.constant('observe' as const), set: fc.nat(labelSets.length - 1),
    value: fc.oneof(fc.constantFrom(0, ...BUCKETS, 11, 1e9), fc.double({ min: 0, max: 20, noNaN: true })),
  }),
  fc.constant({ kind: 'reset' as const }),
);

describe('metric series', () => {
  it('expose what the public inc/observe expose, across resets', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
      const { plain, fast } = pair();
      const counters = labelSets.map((l) => new CounterSeries(fast.counter, l));
      const histograms = labelSets.map((l) => new HistogramSeries(fast.histogram, l));
      for (const s of steps) {
        if (s.kind === 'reset') {
          plain.registry.resetMetrics();
          fast.registry.resetMetrics();
        } else if (s.kind === 'inc') {
          plain.counter.inc(labelSets[s.set]);
          counters[s.set].inc();
        } else {
          plain.histogram.observe(labelSets[s.set], s.value);
          histograms[s.set].observe(s.value);
        }
      }
      assert.equal(await fast.registry.metrics(), await plain.registry.metrics());
    }), { numRuns: 300 });
  });

  it('adds to a series that was observed through the public API before', async () => {
    const { fast } = pair();
    fast.histogram.observe(labelSets[0], 0.5);
    fast.counter.inc(labelSets[0], 2);
    new HistogramSeries(fast.histogram, { ...labelSets[0] }).observe(0.5);
    new CounterSeries(fast.counter, { ...labelSets[0] }).inc();
    const text = await fast.registry.metrics();
    assert.match(text, /^h_seconds_count\{verb="GET",code="200"\} 2$/m);
    assert.match(text, /^c_total\{verb="GET",code="200"\} 3$/m);
  });
});
