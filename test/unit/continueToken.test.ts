// Continue tokens: what encodeContinue makes decodes to the same page start, and a token is accepted
// only with a revision an int64 holds exactly as a JS number (a positive safe integer, or a negative
// one for the latest state, as an expired continue's 410 hands out), whatever JSON a client forges into it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isApiError } from '../../src/apimachinery/status.js';
import { CONTINUE_LATEST, decodeContinue, encodeContinue } from '../../src/storage/continueToken.js';

const prefix = 'ns/';
const keyArb = fc.string({ unit: 'grapheme', maxLength: 20 }).filter((k) => !k.includes('..')).map((k) => prefix + k);

function forge(rv: unknown, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

describe('continue tokens', () => {
  it('decode to the revision and key they were made from', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), keyArb, (rv, key) => {
      assert.deepEqual(decodeContinue(encodeContinue(rv, key), prefix), { rv, startAfter: key });
    }));
  });

  it('are refused with 400 (as ValidateListOptions words it) unless the revision is a non-zero safe integer; a negative one reads the latest state', () => {
    const rvArb = fc.oneof(fc.double(), fc.integer(), fc.integer({ min: -3, max: 1 }), fc.bigInt().map((b) => Number(b)), fc.jsonValue(), fc.constant(2 ** 53 + 2));
    fc.assert(fc.property(rvArb, (rv) => {
      const valid = typeof rv === 'number' && Number.isSafeInteger(rv) && rv !== 0;
      let out: { rv: number } | undefined;
      try {
        out = decodeContinue(forge(rv, `${prefix}a\u0000`), prefix);
      } catch (e) {
        assert.ok(isApiError(e) && e.code === 400 && /^invalid continue token: continue key is not valid: /.test(e.message), String(e));
      }
      assert.equal(out !== undefined, valid, `rv ${JSON.stringify(rv)}`);
      if (out) assert.equal(out.rv, (rv as number) < 0 ? CONTINUE_LATEST : rv);
    }), { numRuns: 500 });
  });

  it('any raw string, and any JSON forged into a token (other types, deep nesting, non-ASCII keys), is a decode or a 400, never another error', () => {
    const valueArb = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.string({ unit: 'binary' }));
    const forgedArb = fc.record({ v: fc.oneof(fc.constant('meta.k8s.io/v1'), valueArb), rv: valueArb, start: fc.oneof(keyArb, fc.string({ unit: 'binary' }), valueArb) }, { requiredKeys: [] })
      .map((o) => Buffer.from(JSON.stringify(o)).toString('base64url'));
    const nested = fc.integer({ min: 1, max: 20_000 }).map((d) => Buffer.from('['.repeat(d) + ']'.repeat(d)).toString('base64url'));
    fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary' }), forgedArb, nested), (s) => {
      try {
        const c = decodeContinue(s, prefix);
        assert.ok(Number.isSafeInteger(c.rv) && (c.rv > 0 || c.rv === CONTINUE_LATEST) && c.startAfter.startsWith(prefix));
      } catch (e) {
        assert.ok(isApiError(e) && e.code === 400 && /^invalid continue token: continue key is not valid: /.test(e.message), String(e));
      }
    }), { numRuns: 2000 });
  });
});
