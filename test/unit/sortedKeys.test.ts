import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SortedKeys } from '../../src/storage/cacher/sortedKeys.js';

/** A seeded generator, so a failure can be replayed. */
function rng(seed: number) {
  return () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
}

test('matches a sorted array under random inserts, deletes and range reads across block splits', () => {
  const rand = rng(42);
  const keys = new SortedKeys();
  const reference = new Set<string>();
  const key = () => `ns${Math.floor(rand() * 20)}/llama-${Math.floor(rand() * 5000)}`;
  for (let step = 0; step < 30_000; step++) {
    const k = key();
    if (rand() < 0.7) { keys.insert(k); reference.add(k); } else { keys.delete(k); reference.delete(k); }
    if (step % 3000 === 0) {
      const sorted = [...reference].sort();
      assert.deepEqual([...keys.from('')], sorted);
      const probe = key();
      assert.deepEqual([...keys.from(probe)], sorted.filter((x) => x >= probe));
      assert.deepEqual([...keys.from(probe, true)], sorted.filter((x) => x > probe));
    }
  }
  assert.equal(keys.size, reference.size);
  assert.ok(reference.size > 2048, 'the test must exercise several blocks');
});

test('reset takes sorted keys; deleting everything empties it', () => {
  const keys = new SortedKeys();
  const sorted = Array.from({ length: 3000 }, (_, i) => `k${String(i).padStart(5, '0')}`);
  keys.reset(sorted);
  assert.deepEqual([...keys.from('k01000', true)].slice(0, 2), ['k01001', 'k01002']);
  for (const k of sorted) keys.delete(k);
  assert.equal(keys.size, 0);
  assert.deepEqual([...keys.from('')], []);
  keys.insert('b'); keys.insert('a'); keys.insert('a');
  assert.deepEqual([...keys.from('')], ['a', 'b']);
});
