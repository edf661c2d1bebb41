// The shared NDJSON line reader: whatever the chunking of a stream (inside a multi-byte UTF-8
// character too), the same lines come out, each as soon as its '\n' has arrived.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LineReader } from '../../src/apimachinery/ndjson.js';

/** What each push returned, then what end() returned. */
function feed(chunks: (Buffer | string)[]): { perPush: string[][]; tail: string[] } {
  const reader = new LineReader();
  const perPush = chunks.map((c) => reader.push(c));
  return { perPush, tail: reader.end() };
}

/** The lines whose '\n' lies in each of the byte ranges [cuts[k-1], cuts[k]), and the unterminated rest. */
function expected(text: string, cuts: number[]): { perPush: string[][]; tail: string[] } {
  const bytes = Buffer.from(text, 'utf8');
  const perPush: string[][] = cuts.map(() => []);
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0x0a) continue;
    perPush[cuts.findIndex((end) => i < end)].push(bytes.subarray(start, i).toString('utf8'));
    start = i + 1;
  }
  const rest = bytes.subarray(start).toString('utf8');
  return { perPush, tail: rest === '' ? [] : [rest] };
}

function cutBytes(text: string, inner: number[]): { chunks: Buffer[]; cuts: number[] } {
  const bytes = Buffer.from(text, 'utf8');
  const cuts = [...inner, bytes.length];
  let from = 0;
  const chunks = cuts.map((to) => { const c = bytes.subarray(from, to); from = to; return c; });
  return { chunks, cuts };
}

/** Any text: lines of any UTF-16 (lone surrogates too), empty ones included. */
const anyText = fc.array(fc.string({ unit: 'binary', maxLength: 12 }), { maxLength: 8 }).map((lines) => lines.join('\n'));
const anyCuts = fc.array(fc.nat(), { maxLength: 10 });
/** Cut points folded into [0, length], in order. */
const within = (raw: number[], length: number) => raw.map((c) => c % (length + 1)).sort((a, b) => a - b);

// 1-, 2-, 3- and 4-byte characters, empty lines (also first and last), a '\r' kept, a partial tail.
const sample = '\n{"a":"é"}\n\n✓ x\r\n😀😀\nlast é✓😀';

describe('LineReader', () => {
  it('gives the same lines for every split of the bytes into two and three chunks', () => {
    const n = Buffer.byteLength(sample);
    let cases = 0;
    for (let i = 0; i <= n; i++) {
      for (let j = i; j <= n; j++) {
        const { chunks, cuts } = cutBytes(sample, [i, j]);
        assert.deepEqual(feed(chunks), expected(sample, cuts), `cuts at bytes ${i} and ${j}`);
        cases++;
      }
    }
    assert.equal(cases, ((n + 1) * (n + 2)) / 2);
  });

  it('splits the sample into the lines String.split finds', () => {
    const { perPush, tail } = feed([Buffer.from(sample)]);
    assert.deepEqual([...perPush.flat(), ...tail], sample.split('\n'));
    assert.deepEqual(perPush[0].slice(0, 5), ['', '{"a":"é"}', '', '✓ x\r', '😀😀']);
  });

  it('gives the same lines for any byte chunking of any text (property)', () => {
    fc.assert(fc.property(anyText, anyCuts, (text, raw) => {
      const { chunks, cuts } = cutBytes(text, within(raw, Buffer.byteLength(text)));
      assert.deepEqual(feed(chunks), expected(text, cuts));
    }), { numRuns: 2000 });
  });

  it('takes decoded string chunks too, even cut inside a surrogate pair', () => {
    fc.assert(fc.property(anyText, anyCuts, (text, raw) => {
      let from = 0;
      const chunks = [...within(raw, text.length), text.length].map((to) => { const c = text.slice(from, to); from = to; return c; });
      const { perPush, tail } = feed(chunks);
      const all = text.split('\n');
      assert.deepEqual([...perPush.flat(), ...tail], all.at(-1) === '' ? all.slice(0, -1) : all);
    }), { numRuns: 1000 });
  });

  it('keeps a line that spans many chunks whole', () => {
    const long = 'é'.repeat(100_000);
    const bytes = Buffer.from(`${long}\nnext\n`);
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 333) chunks.push(bytes.subarray(at, at + 333));
    const { perPush, tail } = feed(chunks);
    assert.deepEqual(perPush.flat(), [long, 'next']);
    assert.deepEqual(tail, []);
  });

  it('returns nothing at end when the stream ended with a newline or was empty', () => {
    assert.deepEqual(feed([]), { perPush: [], tail: [] });
    assert.deepEqual(feed(['a\n']), { perPush: [['a']], tail: [] });
    assert.deepEqual(feed(['a\n', '']), { perPush: [['a'], []], tail: [] });
  });

  it('ends a tail cut inside a UTF-8 character with U+FFFD, as a decoder does', () => {
    const cut = Buffer.from('ok\n✓').subarray(0, 5); // "ok\n" and 2 of the 3 bytes of '✓'
    assert.deepEqual(feed([cut]), { perPush: [['ok']], tail: ['\ufffd'] });
  });
});
