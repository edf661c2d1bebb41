// Event lines as bytes: the chunk framing of any text, and the bounded cache of shared lines.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { eventBytes, eventLine, objectBytes, sharedEventLine } from '../../src/endpoints/eventLines.js';

describe('eventBytes', () => {
  it('frames any text and bytes as one HTTP/1.1 chunk whose data is the parts in order', () => {
    const part = fc.oneof(fc.string({ unit: 'binary' }), fc.uint8Array().map((a) => Buffer.from(a)));
    fc.assert(fc.property(fc.array(part, { minLength: 1, maxLength: 5 }), (parts) => {
      const data = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
      const { chunk, bytes } = eventBytes(parts);
      assert.deepEqual(bytes, data);
      assert.deepEqual(chunk, Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]));
      assert.equal(bytes.buffer, chunk.buffer, 'one allocation');
    }), { seed: 20261124, numRuns: 500 });
  });

  it('objectBytes is the byte size of the embedded object, multi-byte characters included', () => {
    const object = JSON.stringify({ metadata: { name: 'ünïcødé', annotations: { a: '🦙' } } });
    assert.equal(objectBytes('MODIFIED', eventBytes([eventLine('MODIFIED', object)])), Buffer.byteLength(object));
  });
});

describe('sharedEventLine', () => {
  const entry = (json: string) => ({ json });

  it('one line per entry and event type, the same bytes for every caller', () => {
    const e = entry('{"kind":"Llama"}');
    const added = sharedEventLine('ADDED', e);
    assert.equal(sharedEventLine('ADDED', e), added);
    const deleted = sharedEventLine('DELETED', e);
    assert.notEqual(deleted, added);
    assert.equal(deleted.bytes.toString(), eventLine('DELETED', e.json));
    assert.equal(added.bytes.toString(), eventLine('ADDED', e.json));
    // Equal content in another entry is another entry: identity is what the cache keys on.
    assert.notEqual(sharedEventLine('ADDED', entry(e.json)), added);
  });

  it('keeps only recent entries: a replay of many objects does not copy the store', () => {
    const first = entry('{"n":0}');
    const line = sharedEventLine('ADDED', first);
    for (let i = 1; i <= 300; i++) sharedEventLine('ADDED', entry(`{"n":${i}}`));
    const again = sharedEventLine('ADDED', first);
    assert.notEqual(again, line, 'evicted after 256 newer entries');
    assert.deepEqual(again.chunk, line.chunk);
  });

  it('keeps about 8 MiB of lines: large objects are evicted by size before count', () => {
    const big = (c: string) => entry(`"${c.repeat(3 << 20)}"`);
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(big);
    const lines = [a, b, c].map((e) => sharedEventLine('MODIFIED', e));
    sharedEventLine('MODIFIED', d); // 9 MiB held: the oldest goes
    assert.equal(sharedEventLine('MODIFIED', c), lines[2], 'the newest stay');
    assert.notEqual(sharedEventLine('MODIFIED', a), lines[0], 'the oldest was evicted');
  });
});
