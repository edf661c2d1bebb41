// matchesLabels against a naive reference written from labels/selector.go (Requirement.Matches, ANDed),
// over generated selectors and label sets. Both sides of the long-selector walk are reached: selectors
// of 16+ requirements (the indexed path) against objects with fewer labels than the selector's
// absent-ok keys (walks the selector) and with more (walks the object's labels), repeated keys included.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { matchesLabels, parseLabelSelector, type LabelRequirement } from '../../src/apimachinery/labels.js';

const KEYS = Array.from({ length: 60 }, (_, i) => `k${i}`);
// Valid label values; the last one is an integer past int64 (a label may hold it; gt/lt never match it).
const VALUES = ['', '1', '2', '03', 'x', '9223372036854775808'];

/** Requirement.Matches, case by case, with Go's strconv.ParseInt for gt/lt. */
function naiveMatches(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = has ? labels[r.key] : undefined;
  const int = (s: string): bigint | undefined => {
    if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
    const n = BigInt(s);
    return n > 2n ** 63n - 1n || n < -(2n ** 63n) ? undefined : n;
  };
  switch (r.operator) {
    case 'in': case '=': case '==': return has && r.values.includes(v!);
    case 'notin': case '!=': return !has || !r.values.includes(v!);
    case 'exists': return has;
    case '!': return !has;
    case 'gt': case 'lt': {
      if (!has || r.values.length !== 1) return false;
      const a = int(v!), b = int(r.values[0]);
      if (a === undefined || b === undefined) return false;
      return r.operator === 'gt' ? a > b : a < b;
    }
  }
}

const key = fc.constantFrom(...KEYS);
const value = fc.constantFrom(...VALUES);
const integer = fc.constantFrom('1', '2', '03');
const term = fc.oneof(
  fc.tuple(key, value).map(([k, v]) => `${k}=${v}`),
  fc.tuple(key, value).map(([k, v]) => `${k}==${v}`),
  fc.tuple(key, value).map(([k, v]) => `${k}!=${v}`),
  fc.tuple(key, fc.array(value, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} in (${vs.join(',')})`),
  fc.tuple(key, fc.array(value, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} notin (${vs.join(',')})`),
  key,
  key.map((k) => `!${k}`),
  fc.tuple(key, integer).map(([k, v]) => `${k}>${v}`),
  fc.tuple(key, integer).map(([k, v]) => `${k}<${v}`),
);
// Selectors long enough for the indexed path, mostly absent-ok terms so that they decide outcomes: on
// keys no object has too (k60…) and mostly with values no object has ('y'), so that one term often decides.
const wideKey = fc.oneof(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 5 })).map((i) => `k${i}`);
const rareValue = fc.oneof(fc.constant('y'), fc.constant('y'), fc.constant('y'), value);
const absentOkTerm = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(wideKey, rareValue).map(([k, v]) => `${k}!=${v}`) },
  { weight: 3, arbitrary: fc.tuple(wideKey, fc.array(rareValue, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} notin (${vs.join(',')})`) },
  { weight: 1, arbitrary: fc.oneof(wideKey, wideKey, wideKey.filter((k) => Number(k.slice(1)) >= 60)).map((k) => `!${k}`) },
);
const selector = fc.oneof(
  fc.array(term, { maxLength: 20 }),
  fc.tuple(fc.array(absentOkTerm, { minLength: 16, maxLength: 40 }), fc.array(term, { maxLength: 4 })).map(([a, b]) => [...a, ...b]),
);
const labelSet = fc.oneof(
  fc.dictionary(fc.constantFrom(...KEYS.slice(0, 6)), value, { maxKeys: 4 }),
  fc.dictionary(key, value, { minKeys: 20, maxKeys: KEYS.length }),
);

describe('matchesLabels agrees with a naive Requirement.Matches over every requirement (generated)', () => {
  it('on either side of the smaller-side walk, with repeated keys, in/notin/!=/!/exists/gt/lt', () => {
    const branches = { selectorSide: { true: 0, false: 0 }, labelSide: { true: 0, false: 0 } };
    fc.assert(fc.property(selector, fc.option(labelSet, { nil: undefined }), (terms, labels) => {
      // Some generated lists do not parse upstream either ("(,,)"): those are the parser's tests' business.
      let sel: ReturnType<typeof parseLabelSelector>;
      try { sel = parseLabelSelector(terms.join(',')); } catch { fc.pre(false); return; }
      const expected = sel.every((r) => naiveMatches(r, labels ?? {}));
      if (sel.length >= 16 && labels) {
        const absentOkKeys = new Set(sel.filter((r) => r.operator === 'notin' || r.operator === '!=' || r.operator === '!').map((r) => r.key)).size;
        branches[absentOkKeys < Object.keys(labels).length ? 'selectorSide' : 'labelSide'][`${expected}`]++;
      }
      assert.equal(matchesLabels(sel, labels), expected, `${terms.join(',')} on ${JSON.stringify(labels)}`);
      // Asked again (the per-labels key list and per-selector index are cached now): the same answer.
      assert.equal(matchesLabels(sel, labels), expected);
    }), { numRuns: 4000, seed: 20261129 });
    const counts = [branches.selectorSide.true, branches.selectorSide.false, branches.labelSide.true, branches.labelSide.false];
    assert.ok(counts.every((n) => n > 20), `both walks exercised, each with both outcomes: ${JSON.stringify(branches)}`);
  });
});
