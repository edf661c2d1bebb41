import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { age, dateCell, humanDuration, parseRFC3339, shortHumanDuration } from '../../src/apimachinery/duration.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;
const y = 365 * d;
const ns = 1e-6; // one Go time.Duration unit, in milliseconds

describe('humanDuration: upstream TestHumanDuration', () => {
  const cases: [number, string][] = [
    [s, '1s'], [70 * s, '70s'], [190 * s, '3m10s'], [70 * m, '70m'], [47 * h, '47h'], [49 * h, '2d1h'],
    [(8 * 24 + 2) * h, '8d'], [367 * d, '367d'], [(365 * 2 * 24 + 25) * h, '2y1d'], [(365 * 8 * 24 + 2) * h, '8y'],
  ];
  for (const [ms, want] of cases) it(`${ms}ms → ${want}`, () => assert.equal(humanDuration(ms), want));
});

describe('humanDuration: upstream TestHumanDurationBoundaries', () => {
  const ms1 = 1;
  const cases: [number, string][] = [
    [-2 * s, '<invalid>'], [-2 * s + ns, '0s'], [0, '0s'], [s - ms1, '0s'],
    [2 * m - ms1, '119s'], [2 * m, '2m'], [2 * m + s, '2m1s'], [10 * m - ms1, '9m59s'], [10 * m, '10m'], [10 * m + s, '10m'],
    [3 * h - ms1, '179m'], [3 * h, '3h'], [3 * h + m, '3h1m'], [8 * h - ms1, '7h59m'], [8 * h, '8h'], [8 * h + 59 * m, '8h'],
    [2 * d - ms1, '47h'], [2 * d, '2d'], [2 * d + h, '2d1h'], [8 * d - ms1, '7d23h'], [8 * d, '8d'], [8 * d + 23 * h, '8d'],
    [2 * y - ms1, '729d'], [2 * y, '2y'], [2 * y + 23 * h, '2y'], [2 * y + 23 * h + 59 * m, '2y'], [2 * y + d - ms1, '2y'],
    [2 * y + d, '2y1d'], [3 * y, '3y'], [4 * y, '4y'], [5 * y, '5y'], [6 * y, '6y'], [7 * y, '7y'], [8 * y - ms1, '7y364d'],
    [8 * y, '8y'], [8 * y + 364 * d, '8y'], [9 * y, '9y'],
  ];
  for (const [ms, want] of cases) it(`${ms}ms → ${want}`, () => assert.equal(humanDuration(ms), want));

  it('the examples of the brief', () => {
    assert.equal(humanDuration(59 * s), '59s');
    assert.equal(humanDuration(5 * m + 12 * s), '5m12s');
    assert.equal(humanDuration(3 * h), '3h');
    assert.equal(humanDuration(2 * d + 4 * h), '2d4h');
    assert.equal(humanDuration(8 * y), '8y');
  });
});

describe('shortHumanDuration: upstream TestShortHumanDurationBoundaries', () => {
  const ms1 = 1;
  const cases: [number, string][] = [
    [-2 * s, '<invalid>'], [-2 * s + ns, '0s'], [0, '0s'], [s - ms1, '0s'], [s, '1s'], [2 * s - ms1, '1s'],
    [m - ms1, '59s'], [m, '1m'], [2 * m - ms1, '1m'], [h - ms1, '59m'], [h, '1h'], [2 * h - ms1, '1h'],
    [d - ms1, '23h'], [d, '1d'], [2 * d - ms1, '1d'], [y - ms1, '364d'], [y, '1y'], [2 * y - ms1, '1y'], [2 * y, '2y'],
  ];
  for (const [ms, want] of cases) it(`${ms}ms → ${want}`, () => assert.equal(shortHumanDuration(ms), want));
});

describe('parseRFC3339 (metav1.Time.UnmarshalQueryParameter)', () => {
  it('parses RFC 3339 with fractions and offsets', () => {
    assert.equal(parseRFC3339('1970-01-01T00:00:00Z'), 0);
    assert.equal(parseRFC3339('2024-01-02T03:04:05Z'), Date.UTC(2024, 0, 2, 3, 4, 5));
    assert.equal(parseRFC3339('2024-01-02T03:04:05.250Z'), Date.UTC(2024, 0, 2, 3, 4, 5, 250));
    assert.equal(parseRFC3339('2024-01-02T03:04:05+01:30'), Date.UTC(2024, 0, 2, 1, 34, 5));
    assert.equal(parseRFC3339('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29));
  });

  it('"", "null" and 0001-01-01T00:00:00Z are the zero time', () => {
    assert.equal(parseRFC3339(''), null);
    assert.equal(parseRFC3339('null'), null);
    assert.equal(parseRFC3339('0001-01-01T00:00:00Z'), null);
  });

  it('rejects what Go\'s time.Parse rejects', () => {
    for (const bad of ['2024-01-02t03:04:05Z', '2024-01-02T03:04:05z', '2024-01-02 03:04:05Z', '2024-01-02T03:04:05', '2023-02-29T00:00:00Z',
      '2024-13-01T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01T23:59:60Z', '2024-01-02T03:04:05+0100', ' 2024-01-02T03:04:05Z', 'yesterday']) {
      assert.equal(parseRFC3339(bad), undefined, bad);
    }
  });
});

describe('age (Table Age column)', () => {
  const now = Date.UTC(2024, 5, 1, 12, 0, 0);
  it('is HumanDuration of the time since creation', () => {
    assert.equal(age('2024-06-01T12:00:00Z', now), '0s');
    assert.equal(age('2024-06-01T11:59:01Z', now), '59s');
    assert.equal(age('2024-06-01T11:54:48Z', now), '5m12s');
    assert.equal(age('2024-06-01T09:00:00Z', now), '3h');
    assert.equal(age('2024-05-30T08:00:00Z', now), '2d4h');
    assert.equal(age('2016-06-01T12:00:00Z', now), '8y');
    assert.equal(age('2022-05-30T12:00:00Z', now), '2y3d'); // 733 days: 365-day years, as upstream
  });
  it('tolerates up to 2s of clock skew, then is <invalid>', () => {
    assert.equal(age('2024-06-01T12:00:01Z', now), '0s');
    assert.equal(age('2024-06-01T12:00:02Z', now), '<invalid>');
  });
  it('is <unknown> without a usable timestamp', () => {
    assert.equal(age(undefined, now), '<unknown>');
    assert.equal(age('', now), '<unknown>');
    assert.equal(age('0001-01-01T00:00:00Z', now), '<unknown>');
    assert.equal(age('garbage', now), '<unknown>');
  });
  it('defaults now to the current time', () => {
    assert.equal(age(new Date(Date.now() - 90 * s).toISOString()), '90s');
  });
});

describe('dateCell (CRD printer column of type date)', () => {
  const now = Date.UTC(2024, 5, 1, 12, 0, 0);
  it('follows tableconvertor.cellForJSONValue', () => {
    assert.equal(dateCell('2024-06-01T00:00:00Z', now), '12h');
    assert.equal(dateCell('2024-06-02T00:30:00Z', now), '<invalid>');
    assert.equal(dateCell('', now), '<unknown>');
    assert.equal(dateCell('not a date', now), '<invalid>');
    assert.equal(dateCell(42, now), null);
    assert.equal(dateCell(true, now), null);
    assert.equal(dateCell(undefined, now), null);
  });
});
