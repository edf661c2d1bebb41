// The per-object caches behind Table and list bodies: cached cells must change exactly when their
// text would (Age across its boundaries, forwards and backwards in time), and the byte-built list
// bodies must equal the string renderings.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { humanDuration } from '../../src/apimachinery/duration.js';
import { BodyBuilder, piecesBuffer } from '../../src/endpoints/bodyBuilder.js';
import { renderList, renderListBody } from '../../src/endpoints/render.js';
import type { PrinterColumn, ResourceDefinition } from '../../src/registry/resource.js';
import { partialObjectMetadataList, partialObjectMetadataListPieces, table, tablePieces, type TableOptions } from '../../src/endpoints/table.js';
import { humanDurationChangesAt, rowCells, timedCell } from '../../src/registry/tableCells.js';
import type { KubeObject, ListMeta } from '../../src/apimachinery/types.js';
import { farmPodDefinition, type FarmPodSource } from '../../src/registry/farm/farmpod.js';
import { llamaShape } from '../helpers/providers.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;
const y = 365 * d;

const T0 = Date.parse('2020-03-01T10:00:00Z');
const iso = (t: number) => new Date(t).toISOString().replace(/\.000Z$/, 'Z');

const llamaDef = llamaShape();

function llama(name: string, createdAt: number | undefined, extra: Record<string, unknown> = {}): { object: KubeObject; json: string } {
  const object: KubeObject = {
    apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '7', ...(createdAt === undefined ? {} : { creationTimestamp: iso(createdAt) }) },
    spec: { weight: 120, height: 1.7, color: 'brown', favoriteFood: 'hay', ...extra },
  };
  return { object, json: JSON.stringify(object) };
}

const opts = (now: number, o: Partial<TableOptions> = {}): TableOptions => ({ version: 'v1', includeObject: 'None', withColumns: false, now, ...o });
const ageAt = (item: { object: KubeObject; json: string }, now: number): unknown => {
  const t = JSON.parse(table(llamaDef, [item], { resourceVersion: '1' }, opts(now)));
  return t.rows[0].cells[5];
};

describe('humanDurationChangesAt', () => {
  // Durations across every range of HumanDuration, their edges, and a pseudo-random sweep.
  const edges = [0, 999, s, 119 * s, 120 * s, 10 * m - 1, 10 * m, 3 * h - 1, 3 * h, 8 * h - 1, 8 * h, 48 * h - 1, 48 * h, 8 * d - 1, 8 * d,
    2 * y - 1, 2 * y, 8 * y - 1, 8 * y, 8 * y + 5 * d, 40 * y + 3];
  let x = 7;
  const sweep = Array.from({ length: 3000 }, (_, i) => { x = (x * 48271) % 2147483647; return Math.floor((x / 2147483647) * [2 * m, 4 * h, 10 * d, 3 * y, 30 * y][i % 5]); });

  it('the text holds from the duration up to just before the change, and differs at it', () => {
    for (const ms of [...edges, ...sweep]) {
      const at = humanDurationChangesAt(ms);
      assert.ok(at > ms, `${ms}: ${at} must be later`);
      assert.equal(humanDuration(at - 1), humanDuration(ms), `${ms} ms holds until ${at} ms`);
      assert.notEqual(humanDuration(at), humanDuration(ms), `${ms} ms changes at ${at} ms`);
    }
  });

  it('within the 2 s tolerance "0s" holds until 1 s; past it (<invalid>) nothing is cached', () => {
    assert.equal(humanDurationChangesAt(-1999), 1000);
    assert.equal(humanDurationChangesAt(-1), 1000);
    assert.equal(humanDurationChangesAt(-2000), -2000);
    assert.equal(humanDurationChangesAt(-5 * h), -5 * h);
  });
});

describe('Table rows cached per object', () => {
  it('Age changes when its text would: 119s → 2m, 9m59s → 10m, 47h → 2d, 7y364d → 8y, and back in time', () => {
    const item = llama('dolly', T0);
    const steps: [number, string][] = [
      [119 * s, '119s'], [119 * s, '119s'], [120 * s - 1, '119s'], [120 * s, '2m'], [121 * s, '2m1s'],
      [10 * m - 1, '9m59s'], [10 * m, '10m'], [47 * h + 59 * m, '47h'], [48 * h, '2d'],
      [8 * y - 1, '7y364d'], [8 * y, '8y'], [9 * y - 1, '8y'], [9 * y, '9y'],
      [5 * s, '5s'], [-1500, '0s'], [-2 * s, '<invalid>'], [-2 * s, '<invalid>'], [1 * s, '1s'],
    ];
    for (const [since, want] of steps) assert.equal(ageAt(item, T0 + since), want, `${since} ms after creation`);
  });

  it('a missing creationTimestamp is <unknown> at any time', () => {
    const item = llama('nobody', undefined);
    for (const now of [T0, T0 + 10 * y, T0 - y]) assert.equal(ageAt(item, now), '<unknown>');
  });

  it('cells that read only the object are made once; a cell taking `now` without timedCell is made every time', () => {
    const calls = { fixed: 0, clock: 0, timed: 0 };
    const columns: PrinterColumn[] = [
      { name: 'Name', type: 'string', description: 'n', priority: 0, cell: (o) => { calls.fixed++; return o.metadata.name ?? ''; } },
      { name: 'Clock', type: 'integer', description: 'c', priority: 0, cell: (_o, now) => { calls.clock++; return Math.floor(now / 1000); } },
      { name: 'Tick', type: 'integer', description: 't', priority: 0, cell: timedCell((_o, now) => { calls.timed++; const v = Math.floor(now / 10_000); return { value: v, until: (v + 1) * 10_000 }; }) },
    ];
    const { object } = llama('counted', T0);
    const at = (now: number) => JSON.parse(rowCells(columns, object, now)) as unknown[];
    assert.deepEqual(at(100_000), ['counted', 100, 10]);
    assert.deepEqual(at(101_000), ['counted', 101, 10]);
    assert.deepEqual(at(109_999), ['counted', 109, 10]);
    assert.deepEqual(at(110_000), ['counted', 110, 11]);
    assert.deepEqual(at(90_000), ['counted', 90, 9], 'earlier than the cached row: made again');
    assert.equal(calls.fixed, 1);
    assert.equal(calls.clock, 5);
    assert.equal(calls.timed, 5, 'remade whenever the row is (the untimed clock cell forces it)');

    const onlyTimed = [columns[0], columns[2]];
    const { object: other } = llama('other', T0);
    const before = calls.timed;
    for (const now of [100_000, 101_000, 109_999]) assert.deepEqual(JSON.parse(rowCells(onlyTimed, other, now)), ['other', 10]);
    assert.equal(calls.timed - before, 1, 'a timed cell is reused while its text holds');
    assert.deepEqual(JSON.parse(rowCells(onlyTimed, other, 110_000)), ['other', 11]);
  });

  it('the same object under another set of columns gets its own cells', () => {
    const { object } = llama('twice', T0);
    const a: PrinterColumn[] = [{ name: 'A', type: 'string', description: 'a', priority: 0, cell: () => 'a' }];
    const b: PrinterColumn[] = [{ name: 'B', type: 'string', description: 'b', priority: 0, cell: () => 'b' }];
    assert.equal(rowCells(a, object, T0), '["a"]');
    assert.equal(rowCells(b, object, T0), '["b"]');
    assert.equal(rowCells(a, object, T0), '["a"]');
  });

  it('FarmPod RESTARTS follows the age of the last restart across its boundary', () => {
    const def = farmPodDefinition({} as FarmPodSource);
    const restarts = def.columns.find((c) => c.name === 'Restarts')!;
    const pod: KubeObject = { apiVersion: 'farm.example.com/v1alpha', kind: 'FarmPod', metadata: { name: 'p', creationTimestamp: iso(T0) }, status: { restarts: 3, lastRestartTime: iso(T0 + h) } };
    const cellAt = (now: number) => (JSON.parse(rowCells(def.columns, pod, now)) as unknown[])[def.columns.indexOf(restarts)];
    assert.equal(cellAt(T0 + h + 119 * s), '3 (119s ago)');
    assert.equal(cellAt(T0 + h + 120 * s), '3 (2m ago)');
    const none: KubeObject = { ...pod, status: { restarts: 0 } };
    assert.equal((JSON.parse(rowCells(def.columns, none, T0)) as unknown[])[def.columns.indexOf(restarts)], '0');
  });
});

describe('list bodies built as bytes', () => {
  const items = [
    llama('dolly', T0),
    llama('ünï-🦙', T0 - 3 * y, { favoriteFood: 'carottes « bio » 🥕', color: 'white' }),
    llama('q', T0 + 5 * m, { weight: 'heavy', note: 'line\u2028sep "quoted" \\ back' }),
  ];
  const meta: ListMeta = { resourceVersion: '42', continue: 'abc', remainingItemCount: 3 };

  it('Table: the same bytes as table(), for every includeObject and version, empty or not', () => {
    for (const includeObject of ['None', 'Metadata', 'Object'] as const) {
      for (const version of ['v1', 'v1beta1'] as const) {
        for (const list of [items, [], [items[1]]]) {
          const o = opts(T0 + 2 * d, { includeObject, version, withColumns: true });
          const text = table(llamaDef, list, meta, o);
          assert.doesNotThrow(() => JSON.parse(text));
          assert.deepEqual(piecesBuffer(tablePieces(llamaDef, list, meta, o)), Buffer.from(text));
        }
      }
    }
  });

  it('PartialObjectMetadataList and the JSON list: the same bytes as the string renderings', () => {
    for (const list of [items, [], [items[2]]]) {
      for (const version of ['v1', 'v1beta1'] as const) {
        assert.deepEqual(piecesBuffer(partialObjectMetadataListPieces(list.map((i) => i.object), meta, version)), Buffer.from(partialObjectMetadataList(list.map((i) => i.object), meta, version)));
      }
      const json = renderList(llamaDef as ResourceDefinition, list, meta, { format: 'json' }, 'Metadata');
      const bytes = renderListBody(llamaDef, list, meta, { format: 'json' }, 'Metadata');
      assert.deepEqual(bytes.body, Buffer.from(json.body));
      assert.equal(bytes.contentType, 'application/json; charset=utf-8', 'what fastify sends for a JSON string');
    }
  });

  it('BodyBuilder grows past its scratch and keeps multi-byte text intact; a second builder at once does not share it', () => {
    const big = 'x'.repeat(100_000);
    const a = new BodyBuilder();
    const b = new BodyBuilder();
    const expected: string[] = [];
    for (let i = 0; i < 30; i++) {
      const piece = i % 3 === 0 ? big : `ü🦙${i}`;
      a.write(piece);
      b.write(`b${i}`);
      expected.push(piece);
    }
    assert.equal(a.finish().toString('utf8'), expected.join(''));
    assert.equal(b.finish().toString('utf8'), Array.from({ length: 30 }, (_, i) => `b${i}`).join(''));
    const c = new BodyBuilder();
    c.write('again');
    c.write(',');
    const done = c.finish();
    const next = new BodyBuilder();
    next.write('fresh');
    c.write('stale write after finish');
    assert.equal(done.toString('utf8'), 'again,');
    assert.equal(next.finish().toString('utf8'), 'fresh', 'a finished builder no longer writes into the shared scratch');
  });
});
