// Table / PartialObjectMetadata renderings and the Age column (duration.HumanDuration and
// table.ConvertToHumanReadableDateType from k8s.io/apimachinery).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { age, dateCell, humanDuration, shortHumanDuration } from '../../src/apimachinery/duration.js';
import { ApiError } from '../../src/apimachinery/status.js';
import { columnDefinitions, parseIncludeObject, partialObjectMetadata, partialObjectMetadataList, table } from '../../src/endpoints/table.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { llamaShape } from '../helpers/providers.js';

const def = llamaShape();

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

const NOW = Date.parse('2026-06-15T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function llama(name: string, spec: Record<string, unknown>, createdAgo: number, extra: Partial<KubeObject['metadata']> = {}): { object: KubeObject; json: string } {
  const object: KubeObject = {
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '7', creationTimestamp: ago(createdAgo), ...extra },
    spec,
  };
  return { object, json: JSON.stringify(object) };
}

describe('humanDuration (duration.HumanDuration)', () => {
  const cases: [number, string][] = [
    [0, '0s'], [s, '1s'], [70 * s, '70s'], [119 * s, '119s'], [120 * s, '2m'], [121 * s, '2m1s'], [190 * s, '3m10s'],
    [9 * m + 59 * s, '9m59s'], [10 * m, '10m'], [10 * m + 30 * s, '10m'], [70 * m, '70m'], [179 * m, '179m'], [3 * h, '3h'],
    [3 * h + m, '3h1m'], [7 * h + 59 * m, '7h59m'], [8 * h, '8h'], [47 * h, '47h'], [48 * h, '2d'], [49 * h, '2d1h'],
    [2 * d + 4 * h, '2d4h'], [7 * d + 23 * h, '7d23h'], [8 * d + 2 * h, '8d'], [367 * d, '367d'], [729 * d, '729d'],
    [730 * d + 25 * h, '2y1d'], [3 * 365 * d, '3y'], [(365 * 8 * 24 + 2) * h, '8y'], [100 * 365 * d, '100y'],
    // Up to 2s in the future counts as now; more is invalid.
    [-500, '0s'], [-1999, '0s'], [-2 * s, '<invalid>'],
  ];
  for (const [ms, want] of cases) it(`${ms} ms → ${want}`, () => assert.equal(humanDuration(ms), want));

  it('shortHumanDuration keeps one unit', () => {
    assert.deepEqual([59 * s, 60 * s, 59 * m, 23 * h, 364 * d, 730 * d, -1 * s, -2 * s].map(shortHumanDuration), ['59s', '1m', '59m', '23h', '364d', '2y', '0s', '<invalid>']);
  });
});

describe('age (ConvertToHumanReadableDateType)', () => {
  it('formats the time since creationTimestamp', () => {
    assert.equal(age(ago(5 * m + 12 * s), NOW), '5m12s');
    assert.equal(age(ago(3 * h), NOW), '3h');
    assert.equal(age(ago(2 * d + 4 * h), NOW), '2d4h');
    assert.equal(age('2026-06-15T14:00:00+02:00', NOW), '0s', 'offsets are honoured');
    assert.equal(age('2026-06-15T11:59:30.750Z', NOW), '29s', 'fractions are honoured and truncated');
  });

  it('<unknown> for a missing, zero or unparsable timestamp', () => {
    assert.equal(age(undefined, NOW), '<unknown>');
    assert.equal(age('0001-01-01T00:00:00Z', NOW), '<unknown>');
    assert.equal(age('yesterday', NOW), '<unknown>');
    assert.equal(age('2026-02-30T00:00:00Z', NOW), '<unknown>');
  });

  it('dateCell: null for non-strings, <invalid> for unparsable strings', () => {
    assert.equal(dateCell(42, NOW), null);
    assert.equal(dateCell(undefined, NOW), null);
    assert.equal(dateCell('nope', NOW), '<invalid>');
    assert.equal(dateCell(ago(90 * s), NOW), '90s');
  });
});

describe('parseIncludeObject', () => {
  it('defaults to Metadata and accepts None, Metadata, Object', () => {
    assert.equal(parseIncludeObject(undefined), 'Metadata');
    assert.equal(parseIncludeObject(''), 'Metadata');
    for (const v of ['None', 'Metadata', 'Object'] as const) assert.equal(parseIncludeObject(v), v);
  });

  it('400 BadRequest for anything else (case matters)', () => {
    for (const v of ['none', 'Full', 'object']) {
      assert.throws(() => parseIncludeObject(v), (e: unknown) => e instanceof ApiError && e.code === 400 && e.reason === 'BadRequest' && e.message.includes(v));
    }
  });
});

describe('PartialObjectMetadata', () => {
  const { object } = llama('dolly', { weight: 1 }, 0, { labels: { app: 'farm' } });

  it('keeps only metadata, under meta.k8s.io/<version>', () => {
    assert.deepEqual(JSON.parse(partialObjectMetadata(object, 'v1')), { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata });
    assert.equal(JSON.parse(partialObjectMetadata(object, 'v1beta1')).apiVersion, 'meta.k8s.io/v1beta1');
  });

  it('a PartialObjectMetadataList carries the list metadata and one item per object', () => {
    const l = JSON.parse(partialObjectMetadataList([object, object], { resourceVersion: '9', continue: 'c', remainingItemCount: 3 }, 'v1'));
    assert.equal(l.kind, 'PartialObjectMetadataList');
    assert.equal(l.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(l.metadata, { resourceVersion: '9', continue: 'c', remainingItemCount: 3 });
    assert.equal(l.items.length, 2);
    assert.deepEqual(l.items[0], { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata });
    assert.deepEqual(JSON.parse(partialObjectMetadataList([], { resourceVersion: '1' }, 'v1')).items, []);
  });
});

describe('Table', () => {
  const dolly = llama('dolly', { weight: 120, height: 1.7, color: 'brown', favoriteFood: 'hay' }, 5 * m + 12 * s);
  const ema = llama('ema', { weight: 90.5, height: 1.4, color: 'white' }, 2 * d + 4 * h);
  const odd = llama('odd', { weight: 'heavy', color: '' }, 0, { creationTimestamp: undefined });

  it('column definitions come from the printer columns, format defaulting to ""', () => {
    assert.deepEqual(columnDefinitions(def).map(({ name, type, format, priority }) => [name, type, format, priority]), [
      ['Name', 'string', 'name', 0], ['Color', 'string', '', 0], ['Weight', 'number', '', 0],
      ['Height', 'number', '', 1], ['Food', 'string', '', 1], ['Age', 'date', '', 0],
    ]);
    for (const c of columnDefinitions(def)) assert.ok(c.description.length > 0);
  });

  it('one row per object with cells in column order; missing or mistyped values are null; Age is HumanDuration', () => {
    const t = JSON.parse(table(def, [dolly, ema, odd], { resourceVersion: '42' }, { version: 'v1', includeObject: 'Metadata', withColumns: true, now: NOW }));
    assert.equal(t.kind, 'Table');
    assert.equal(t.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(t.metadata, { resourceVersion: '42' });
    assert.deepEqual(t.rows.map((r: { cells: unknown[] }) => r.cells), [
      ['dolly', 'brown', 120, 1.7, 'hay', '5m12s'],
      ['ema', 'white', 90.5, 1.4, null, '2d4h'],
      ['odd', null, null, null, null, '<unknown>'],
    ]);
    assert.deepEqual(t.rows[0].object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: dolly.object.metadata });
  });

  it('includeObject=None leaves rows without object; Object embeds the stored JSON', () => {
    const none = JSON.parse(table(def, [dolly], { resourceVersion: '1' }, { version: 'v1', includeObject: 'None', withColumns: true, now: NOW }));
    assert.deepEqual(Object.keys(none.rows[0]), ['cells']);
    const full = JSON.parse(table(def, [dolly], { resourceVersion: '1' }, { version: 'v1', includeObject: 'Object', withColumns: true, now: NOW }));
    assert.deepEqual(full.rows[0].object, dolly.object);
  });

  it('v1beta1 Tables embed v1beta1 PartialObjectMetadata; withColumns=false gives null column definitions', () => {
    const t = JSON.parse(table(def, [dolly], { resourceVersion: '1' }, { version: 'v1beta1', includeObject: 'Metadata', withColumns: false, now: NOW }));
    assert.equal(t.apiVersion, 'meta.k8s.io/v1beta1');
    assert.equal(t.columnDefinitions, null);
    assert.equal(t.rows[0].object.apiVersion, 'meta.k8s.io/v1beta1');
  });

  it('an empty Table still has its columns and an empty rows array', () => {
    const t = JSON.parse(table(def, [], { resourceVersion: '3', continue: 'tok' }, { version: 'v1', includeObject: 'Metadata', withColumns: true, now: NOW }));
    assert.deepEqual(t.rows, []);
    assert.equal(t.columnDefinitions.length, 6);
    assert.deepEqual(t.metadata, { resourceVersion: '3', continue: 'tok' });
  });
});
