// A list body made a chunk at a time: the same bytes as made whole, nothing made before it can be sent,
// and a reader that takes nothing stalls only its own response at a bounded number of bytes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { piecesBody, piecesText, writeChunks, type ChunkSource, type ListPieces } from '../../src/endpoints/bodyBuilder.js';

function pieces(count: number, made = { items: 0 }): ListPieces {
  return {
    count,
    head: (out) => out.write('{"items":['),
    item: (out, i) => { made.items++; out.write(`${i ? ',' : ''}{"n":${i},"text":"${'é✓'.repeat(i % 7)}${'x'.repeat(200)}"}`); },
    tail: (out) => out.write(']}'),
  };
}

function all(src: ChunkSource): Buffer[] {
  const chunks = [src.first];
  for (let c = src.next(); c; c = src.next()) chunks.push(c);
  return chunks;
}

describe('piecesBody', () => {
  it('a body within one chunk is one buffer; an empty list too', () => {
    for (const n of [0, 1, 10]) {
      const body = piecesBody(pieces(n), 32 * 1024);
      assert.ok(Buffer.isBuffer(body));
      assert.equal(body.toString(), piecesText(pieces(n)));
    }
  });

  it('a larger body comes in chunks of about the chunk size with the same bytes, multi-byte text intact', () => {
    for (const n of [200, 1000, 1001]) {
      const body = piecesBody(pieces(n), 4096);
      assert.ok(!Buffer.isBuffer(body));
      const chunks = all(body);
      assert.equal(Buffer.concat(chunks).toString(), piecesText(pieces(n)));
      for (const c of chunks.slice(0, -1)) assert.ok(c.length >= 4096 && c.length < 4096 + 300, `chunk of ${c.length} bytes`);
    }
  });

  it('makes only the first chunk up front', () => {
    const made = { items: 0 };
    piecesBody(pieces(10_000, made), 4096);
    assert.ok(made.items > 0 && made.items < 40, `${made.items} items made up front`);
  });
});

describe('writeChunks', () => {
  it('to a reader that keeps up: the whole body, in order, then the end', async () => {
    const sink = new PassThrough();
    const got: Buffer[] = [];
    sink.on('data', (c: Buffer) => got.push(c));
    const ended = new Promise((r) => sink.on('end', r));
    await writeChunks(sink, piecesBody(pieces(5000), 4096) as ChunkSource);
    await ended;
    assert.equal(Buffer.concat(got).toString(), piecesText(pieces(5000)));
  });

  it('to a reader that takes nothing: stops making chunks past the budget, resumes when it reads', async () => {
    const made = { items: 0 };
    const sink = new PassThrough({ highWaterMark: 1024 });
    const writing = writeChunks(sink, piecesBody(pieces(20_000, made), 4096) as ChunkSource);
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(sink.writableLength <= 64 * 1024 + 4096 + 300, `${sink.writableLength} bytes waiting`);
    const stalledAt = made.items;
    assert.ok(stalledAt < 20_000 / 4, `${stalledAt} of 20,000 items made with nobody reading`);
    let bytes = 0;
    sink.on('data', (c: Buffer) => { bytes += c.length; });
    await writing;
    assert.equal(made.items, 20_000);
    await new Promise((r) => setImmediate(r));
    assert.equal(bytes, Buffer.byteLength(piecesText(pieces(20_000))));
  });

  it('stops when the response is destroyed', async () => {
    const made = { items: 0 };
    const sink = new PassThrough({ highWaterMark: 1024 });
    const writing = writeChunks(sink, piecesBody(pieces(20_000, made), 4096) as ChunkSource);
    await new Promise((r) => setTimeout(r, 20));
    sink.destroy();
    await writing;
    assert.ok(made.items < 20_000);
  });
});
