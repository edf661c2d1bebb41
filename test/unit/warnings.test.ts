// The Warning recorder against k8s.io/apiserver's filters/warning_test.go cases, and the header bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerSafe, Warnings } from '../../src/endpoints/warnings.js';

const headersOf = (w: Warnings) => w.headers().map((h) => Buffer.from(h, 'latin1').toString('utf8'));

describe('Warnings', () => {
  it('one header per distinct text, in order; empty and control-character texts are dropped', () => {
    const w = new Warnings();
    for (const t of ['mytext', '', 'mytext', 'second', 'bad\u0007text', 'with "quotes" and \\']) w.add(t);
    assert.deepEqual(headersOf(w), ['299 - "mytext"', '299 - "second"', '299 - "with \\"quotes\\" and \\\\"']);
  });

  it('truncates as upstream TestTruncation does (total 25 runes, items 5)', () => {
    const w = new Warnings({ totalRunes: 25, itemRunes: 5 });
    for (const t of ['aaaaaaaaaa', 'aaaaaaaaaa', 'bb', 'ccc', 'Iñtërnâtiô']) w.add(t);
    assert.deepEqual(headersOf(w), ['299 - "aaaaaaaaaa"', '299 - "bb"', '299 - "ccc"', '299 - "Iñtërnâtiô"']);
    for (const t of ['e', 'ffffffffff', 'ffffffffff', 'gggggggggg', 'h']) w.add(t);
    assert.deepEqual(headersOf(w), ['299 - "aaaaa"', '299 - "bb"', '299 - "ccc"', '299 - "Iñtër"', '299 - "e"', '299 - "fffff"', '299 - "ggggg"']);
  });

  it('header values carry UTF-8 bytes as Latin-1 characters (Node never throws on them)', () => {
    assert.equal(headerSafe('ascii only'), 'ascii only');
    const v = headerSafe('größe 🦙');
    assert.ok([...v].every((c) => c.charCodeAt(0) <= 0xff));
    assert.equal(Buffer.from(v, 'latin1').toString('utf8'), 'größe 🦙');
  });

  it('200,000 warnings cost the first few: the rest are ignored once the total is reached', () => {
    const w = new Warnings();
    for (let i = 0; i < 200_000; i++) w.add(`unknown field "spec.u${i}"`);
    const h = w.headers();
    assert.ok(h.length > 100 && h.length < 300, String(h.length));
  });
});
