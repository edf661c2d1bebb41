// The in-flight counters against a model: any sequence of acquires and releases keeps each kind
// within its limit (0 = unlimited), refuses exactly when full, and the watermark is the highest
// count since the last read (maxinflight.go's requestWatermark).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { InFlightLimiter, requestKindOf, type RequestKind } from '../../src/server/filters/inFlightLimiter.js';
import { isLongRunning } from '../../src/server/filters/longRunning.js';
import type { RequestInfo } from '../../src/apimachinery/types.js';

type Op = { op: 'acquire' | 'release' | 'watermark'; kind: RequestKind };

describe('InFlightLimiter', () => {
  it('matches a model over generated sequences', () => {
    const opArb: fc.Arbitrary<Op> = fc.record({ op: fc.constantFrom('acquire', 'acquire', 'release', 'watermark'), kind: fc.constantFrom<RequestKind>('readOnly', 'mutating') });
    fc.assert(fc.property(fc.nat(4), fc.nat(4), fc.array(opArb, { maxLength: 60 }), (ro, mu, ops) => {
      const limits = { readOnly: ro, mutating: mu };
      const l = new InFlightLimiter(limits);
      const model = { readOnly: 0, mutating: 0 };
      const mark = { readOnly: 0, mutating: 0 };
      for (const { op, kind } of ops) {
        if (op === 'acquire') {
          const full = limits[kind] !== 0 && model[kind] >= limits[kind];
          assert.equal(l.tryAcquire(kind), !full);
          if (full) { assert.deepEqual(l.counts(), model); continue; } // a refusal records nothing
          model[kind]++;
        } else if (op === 'release') {
          if (model[kind] === 0) continue; // only what was acquired is released
          l.release(kind);
          model[kind]--;
        } else {
          assert.deepEqual(l.takeWatermarks(), mark);
          mark.readOnly = 0; mark.mutating = 0;
          continue;
        }
        mark[kind] = Math.max(mark[kind], model[kind]);
        assert.deepEqual(l.counts(), model);
      }
    }), { seed: 21, numRuns: 400 });
  });

  it('kinds and long-running requests as upstream classifies them', () => {
    assert.deepEqual(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection', 'post'].map(requestKindOf),
      ['readOnly', 'readOnly', 'readOnly', 'mutating', 'mutating', 'mutating', 'mutating', 'mutating', 'mutating']);
    const info = (o: Partial<RequestInfo>): RequestInfo => ({ isResourceRequest: true, path: '/', verb: 'get', apiGroup: '', apiVersion: 'v1', namespace: '', resource: 'llamas', subresource: '', name: '', ...o });
    assert.equal(isLongRunning(info({ verb: 'watch' })), true);
    assert.equal(isLongRunning(info({ verb: 'list' })), false);
    assert.equal(isLongRunning(info({ isResourceRequest: false, path: '/debug/pprof/profile' })), true);
    assert.equal(isLongRunning(info({ isResourceRequest: false, path: '/livez' })), false);
  });
});
