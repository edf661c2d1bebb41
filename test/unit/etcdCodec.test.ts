// The etcd3 layout's size arithmetic: a value stored without resourceVersion is exactly
// resourceVersionFieldLength(rv) shorter than the object as served at rv, for any object (property);
// a storage prefix's etcd range holds exactly the keys that start with it (bytes compared as etcd does).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { EtcdKeys, encodeValue, resourceVersionFieldLength } from '../../src/storage/etcd3/codec.js';
import { stamped } from '../../src/storage/objects.js';

describe('etcd3 codec sizes', () => {
  it('served JSON length = stored value length + the resourceVersion field, in UTF-16 units and in bytes', () => {
    const object = fc.record({
      metadata: fc.record({
        name: fc.string({ minLength: 1, unit: 'grapheme' }),
        resourceVersion: fc.option(fc.stringMatching(/^[0-9]{1,16}$/), { nil: undefined }),
        labels: fc.option(fc.dictionary(fc.string(), fc.string({ unit: 'grapheme' })), { nil: undefined }),
      }, { requiredKeys: ['name'] }),
      spec: fc.jsonValue(),
    });
    fc.assert(fc.property(object, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (o, rv) => {
      const obj = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', ...o } as KubeObject;
      const served = stamped('ns/x', obj, rv).json;
      const value = encodeValue(obj);
      assert.equal(served.length, value.length + resourceVersionFieldLength(rv));
      assert.equal(Buffer.byteLength(served), Buffer.byteLength(value) + resourceVersionFieldLength(rv));
    }));
  });
});

describe('etcd3 key ranges', () => {
  it('rangeOf(prefix) holds a key exactly when the key starts with the prefix, whatever the bytes', () => {
    // Short strings over few characters, including the bytes next to '/' and the largest UTF-8 ones, so keys collide with range ends.
    const piece = fc.string({ unit: fc.constantFrom('/', '0', '.', 'a', '\u00ff', '\uffff', '\u{10ffff}'), maxLength: 4 });
    fc.assert(fc.property(fc.constantFrom('/registry/farm.example.com/llamas', '/r'), piece, piece, (root, prefix, key) => {
      const keys = new EtcdKeys(root);
      const { key: from, range_end: end } = keys.rangeOf(prefix);
      const k = keys.key(key);
      const inside = Buffer.compare(k, from) >= 0 && Buffer.compare(k, end) < 0;
      assert.equal(inside, key.startsWith(prefix), `${JSON.stringify(key)} in the range of ${JSON.stringify(prefix)}`);
    }), { numRuns: 2000 });
  });
});
