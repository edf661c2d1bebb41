// Expected results were checked against kube-apiserver v1.33's own code path
// (handlers.jsonPatcher.applyJSPatch with gopkg.in/evanphx/json-patch.v4 and sigs.k8s.io/json).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyJsonPatch, jsonPatch } from '../../src/apimachinery/jsonPatch.js';
import { applyMergePatch } from '../../src/apimachinery/mergePatch.js';
import { strictDecodingError } from '../../src/apimachinery/fieldValidation.js';
import { goJSON } from '../../src/apimachinery/goCompat.js';
import { ApiError } from '../../src/apimachinery/status.js';

const rejected = 'the server rejected our request due to an error in our request';

function throwsApi(fn: () => unknown, code: number, reason: string, message?: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.equal(e.reason, reason);
    if (message !== undefined) assert.equal(e.message, message);
    return true;
  });
}

/** A patch that does not apply: 422 Invalid with upstream's generic message. */
const throws422 = (fn: () => unknown) => throwsApi(fn, 422, 'Invalid', rejected);

const frozen = <T>(v: T): T => {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const x of Object.values(v)) frozen(x);
  }
  return v;
};

describe('applyMergePatch: RFC 7386 appendix A', () => {
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of cases) {
    it(`${JSON.stringify(target)} + ${JSON.stringify(patch)}`, () => {
      assert.deepEqual(applyMergePatch(target, patch, { fieldValidation: 'Ignore' }), want);
    });
  }

  it('the appendix\'s top-level null and scalar patches are 400s in kube-apiserver', () => {
    throwsApi(() => applyMergePatch({ a: 'foo' }, null), 400, 'BadRequest', 'Invalid JSON Patch');
    throwsApi(() => applyMergePatch({ a: 'foo' }, 'bar', { fieldValidation: 'Ignore' }), 400, 'BadRequest', 'Invalid JSON Patch');
    throwsApi(() => applyMergePatch({ a: 'foo' }, 5, { fieldValidation: 'Ignore' }), 400, 'BadRequest', 'Invalid JSON Patch');
  });
});

describe('applyMergePatch: kube-apiserver specifics', () => {
  it('with Warn (the default) or Strict a non-object body fails decoding', () => {
    const m = (t: string) => `error decoding patch: json: cannot unmarshal ${t} into Go value of type map[string]interface {}`;
    throwsApi(() => applyMergePatch({}, 'x'), 400, 'BadRequest', m('string'));
    throwsApi(() => applyMergePatch({}, 5, { fieldValidation: 'Strict' }), 400, 'BadRequest', m('number'));
    throwsApi(() => applyMergePatch({}, true), 400, 'BadRequest', m('bool'));
    throwsApi(() => applyMergePatch({}, []), 400, 'BadRequest', m('array'));
    throwsApi(() => applyMergePatch({}, null, { fieldValidation: 'Strict' }), 400, 'BadRequest', 'Invalid JSON Patch');
  });

  it('with Ignore an array body is returned with the nulls of its objects pruned', () => {
    assert.deepEqual(applyMergePatch({ a: 1 }, [{ a: null }, null, 1], { fieldValidation: 'Ignore' }), [{}, null, 1]);
  });

  it('nulls are pruned from inserted values, also inside arrays, but not when an object is replaced by an array', () => {
    const doc = { a: 1, b: { c: [1, 2] } };
    assert.deepEqual(applyMergePatch(doc, { b: { c: null, d: [{ e: null }] } }), { a: 1, b: { d: [{}] } });
    assert.deepEqual(applyMergePatch({ x: 1 }, { x: [{ y: null }] }), { x: [{}] });
    assert.deepEqual(applyMergePatch({ x: { z: 1 } }, { x: [{ y: null }] }), { x: [{ y: null }] });
  });

  it('merges metadata the way kubectl patch --type=merge expects', () => {
    const obj = { metadata: { name: 'dolly', labels: { a: '1', b: '2' }, annotations: { x: 'y' } }, spec: { color: 'white' } };
    assert.deepEqual(applyMergePatch(obj, { metadata: { labels: { a: null, c: '3' } }, spec: { color: 'brown', size: 2 } }), {
      metadata: { name: 'dolly', labels: { b: '2', c: '3' }, annotations: { x: 'y' } },
      spec: { color: 'brown', size: 2 },
    });
  });

  it('never mutates its inputs', () => {
    const target = frozen({ a: { b: 1, c: [1, 2] }, d: null });
    const patch = frozen({ a: { b: null, e: { f: null, g: 1 } }, d: { h: null }, i: [{ j: null }] });
    const out = applyMergePatch(target, patch);
    assert.deepEqual(out, { a: { c: [1, 2], e: { g: 1 } }, d: {}, i: [{}] });
    assert.deepEqual(target, { a: { b: 1, c: [1, 2] }, d: null });
    // the result shares nothing with the inputs
    (out as { a: { c: number[] } }).a.c.push(3);
    assert.deepEqual(target.a.c, [1, 2]);
  });

  it('treats "__proto__" as an ordinary member and never pollutes a prototype', () => {
    const patch = JSON.parse('{"__proto__":{"polluted":true},"a":{"__proto__":{"polluted":true}}}');
    const out = applyMergePatch({ a: {} }, patch) as Record<string, unknown>;
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(Object.getPrototypeOf(out.a), Object.prototype);
    assert.ok(Object.prototype.hasOwnProperty.call(out, '__proto__'));
    assert.equal(JSON.stringify(out), '{"a":{"__proto__":{"polluted":true}},"__proto__":{"polluted":true}}');
    // deleting a "__proto__" member that is not there is harmless
    const del = applyMergePatch({ a: 1 }, JSON.parse('{"__proto__":null,"constructor":null}'));
    assert.equal(JSON.stringify(del), '{"a":1}');
    assert.equal(Object.getPrototypeOf(del), Object.prototype);
  });
});

describe('jsonPatch: operations', () => {
  const doc = () => frozen({ metadata: { name: 'x', labels: { a: '1' } }, spec: { list: [1, 2, 3], n: null } });
  const spec = (ops: unknown) => (applyJsonPatch(doc(), ops) as { spec: unknown }).spec;

  it('add', () => {
    assert.deepEqual(spec([{ op: 'add', path: '/spec/x', value: { y: 1 } }]), { list: [1, 2, 3], n: null, x: { y: 1 } });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/1', value: 9 }]), { list: [1, 9, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/3', value: 9 }]), { list: [1, 2, 3, 9], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/-', value: 9 }]), { list: [1, 2, 3, 9], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/-1', value: 9 }]), { list: [1, 2, 3, 9], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/-4', value: 9 }]), { list: [9, 1, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/list/01', value: 9 }]), { list: [1, 9, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/n', value: 0 }]), { list: [1, 2, 3], n: 0 });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/x' }]), { list: [1, 2, 3], n: null, x: null });
    assert.deepEqual(spec([{ op: 'add', path: '/spec/a~1b~0c', value: 1 }]), { list: [1, 2, 3], n: null, 'a/b~c': 1 });
  });

  it('add failures', () => {
    throws422(() => spec([{ op: 'add', path: '/spec/list/4', value: 9 }]));
    throws422(() => spec([{ op: 'add', path: '/spec/list/-5', value: 9 }]));
    throws422(() => spec([{ op: 'add', path: '/spec/list/x', value: 9 }]));
    throws422(() => spec([{ op: 'add', path: '/spec/missing/x', value: 1 }]));
    throws422(() => spec([{ op: 'add', path: '/spec/n/x', value: 1 }]));
    throws422(() => spec([{ op: 'add', path: '/spec/list/0/x', value: 1 }]));
    throws422(() => spec([{ op: 'add', path: '', value: {} }]));
    throws422(() => spec([{ op: 'add', value: 1 }]));
  });

  it('remove', () => {
    assert.deepEqual(applyJsonPatch(doc(), [{ op: 'remove', path: '/metadata/labels/a' }]), { metadata: { name: 'x', labels: {} }, spec: { list: [1, 2, 3], n: null } });
    assert.deepEqual(spec([{ op: 'remove', path: '/spec/list/0' }]), { list: [2, 3], n: null });
    assert.deepEqual(spec([{ op: 'remove', path: '/spec/list/-1' }]), { list: [1, 2], n: null });
    assert.deepEqual(spec([{ op: 'remove', path: '/spec/n' }]), { list: [1, 2, 3] });
    throws422(() => spec([{ op: 'remove', path: '/spec/missing' }]));
    throws422(() => spec([{ op: 'remove', path: '/spec/list/3' }]));
    throws422(() => spec([{ op: 'remove', path: '/spec/list/-' }]));
  });

  it('replace (a missing object member is added, as upstream does)', () => {
    assert.deepEqual(spec([{ op: 'replace', path: '/spec/list/0', value: 0 }]), { list: [0, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'replace', path: '/spec/list/-1', value: 0 }]), { list: [1, 2, 0], n: null });
    assert.deepEqual(spec([{ op: 'replace', path: '/spec/missing', value: 1 }]), { list: [1, 2, 3], n: null, missing: 1 });
    throws422(() => spec([{ op: 'replace', path: '/spec/list/3', value: 0 }]));
    assert.deepEqual(applyJsonPatch(doc(), [{ op: 'replace', path: '', value: { spec: {} } }]), { spec: {} });
    assert.deepEqual(applyJsonPatch(doc(), [{ op: 'replace', path: '', value: 5 }]), doc()); // upstream: silently nothing
  });

  it('move', () => {
    assert.deepEqual(applyJsonPatch(doc(), [{ op: 'move', from: '/metadata/labels/a', path: '/spec/a' }]),
      { metadata: { name: 'x', labels: {} }, spec: { list: [1, 2, 3], n: null, a: '1' } });
    assert.deepEqual(spec([{ op: 'move', from: '/spec/list/0', path: '/spec/list/-' }]), { list: [2, 3, 1], n: null });
    throws422(() => spec([{ op: 'move', from: '/spec/missing', path: '/spec/x' }]));
    throws422(() => spec([{ op: 'move', from: '/spec/list', path: '/spec/list/0' }]));
    throws422(() => spec([{ op: 'move', path: '/spec/x' }]));
  });

  it('copy (a missing object member copies as null, as upstream does)', () => {
    const out = applyJsonPatch(doc(), [{ op: 'copy', from: '/spec/list', path: '/spec/copy' }]) as { spec: { list: number[]; copy: number[] } };
    assert.deepEqual(out.spec, { list: [1, 2, 3], n: null, copy: [1, 2, 3] });
    out.spec.copy.push(4);
    assert.deepEqual(out.spec.list, [1, 2, 3]);
    assert.deepEqual(spec([{ op: 'copy', from: '/spec/missing', path: '/spec/c' }]), { list: [1, 2, 3], n: null, c: null });
    throws422(() => spec([{ op: 'copy', from: '/spec/list/9', path: '/spec/c' }]));
    throws422(() => spec([{ op: 'copy', from: '/spec/list/0', path: '/nope/c' }]));
  });

  it('test', () => {
    assert.deepEqual(spec([{ op: 'test', path: '/spec/list', value: [1, 2, 3] }]), { list: [1, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'test', path: '/metadata', value: { labels: { a: '1' }, name: 'x' } }]), { list: [1, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'test', path: '/spec/n', value: null }]), { list: [1, 2, 3], n: null });
    assert.deepEqual(spec([{ op: 'test', path: '/spec/missing', value: null }]), { list: [1, 2, 3], n: null });
    throws422(() => spec([{ op: 'test', path: '/spec/missing', value: 1 }]));
    throws422(() => spec([{ op: 'test', path: '/spec/list', value: [1, 2] }]));
    throws422(() => spec([{ op: 'test', path: '/spec/list/0', value: '1' }]));
    throws422(() => spec([{ op: 'test', path: '/metadata', value: { name: 'x' } }]));
    throws422(() => spec([{ op: 'test', path: '/spec/list/0' }]));
  });

  it('applies operations in order, atomically', () => {
    const target = doc();
    const out = applyJsonPatch(target, [
      { op: 'test', path: '/metadata/name', value: 'x' },
      { op: 'add', path: '/metadata/labels/b', value: '2' },
      { op: 'remove', path: '/metadata/labels/a' },
      { op: 'copy', from: '/metadata/labels/b', path: '/spec/b' },
      { op: 'move', from: '/spec/list/2', path: '/spec/list/0' },
    ]);
    assert.deepEqual(out, { metadata: { name: 'x', labels: { b: '2' } }, spec: { list: [3, 1, 2], n: null, b: '2' } });
    throws422(() => applyJsonPatch(target, [{ op: 'add', path: '/spec/z', value: 1 }, { op: 'test', path: '/spec/z', value: 2 }]));
    assert.deepEqual(target, doc());
  });

  it('a path without a leading "/" loses its first token (upstream quirk)', () => {
    assert.deepEqual(applyJsonPatch({ spec: {} }, [{ op: 'add', path: 'spec/x', value: 1 }]), { spec: {}, x: 1 });
    throws422(() => applyJsonPatch({ spec: {} }, [{ op: 'add', path: 'x', value: 1 }]));
  });

  it('unknown or malformed operations do not apply (422)', () => {
    throws422(() => spec([{ op: 'bogus', path: '/a' }]));
    throws422(() => spec([{ path: '/a', value: 1 }]));
    throws422(() => spec([{ OP: 'add', path: '/a', value: 1 }]));
    throws422(() => spec([null]));
    throws422(() => applyJsonPatch(doc(), [{ op: 5, path: '/a' }], { fieldValidation: 'Ignore' }));
    throws422(() => applyJsonPatch(doc(), [{ op: 'add', path: 5 }], { fieldValidation: 'Ignore' }));
  });

  it('the 422 keeps the library\'s reason as a non-enumerable cause', () => {
    try {
      spec([{ op: 'test', path: '/spec/n', value: 1 }]);
      assert.fail('expected an error');
    } catch (e) {
      assert.ok(e instanceof ApiError);
      assert.equal((e as { cause?: unknown }).cause, 'testing value /spec/n failed: test failed');
      assert.deepEqual(e.toStatus(), { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: rejected, reason: 'Invalid', code: 422, details: {} });
    }
  });

  it('null and [] are no-ops', () => {
    assert.deepEqual(applyJsonPatch(doc(), null), doc());
    assert.deepEqual(applyJsonPatch(doc(), []), doc());
  });
});

describe('jsonPatch: decoding the body', () => {
  it('with Warn (the default) or Strict: the body must be an array of operation objects', () => {
    const m = (s: string) => `error decoding patch: json: cannot unmarshal ${s}`;
    throwsApi(() => jsonPatch({}, {}), 400, 'BadRequest', m('object into Go value of type []handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, 'x', { fieldValidation: 'Strict' }), 400, 'BadRequest', m('string into Go value of type []handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, 5), 400, 'BadRequest', m('number into Go value of type []handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, true), 400, 'BadRequest', m('bool into Go value of type []handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, [5]), 400, 'BadRequest', m('number into Go value of type handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, [[]]), 400, 'BadRequest', m('array into Go value of type handlers.jsonPatchOp'));
    throwsApi(() => jsonPatch({}, [{ op: 5 }]), 400, 'BadRequest', m('number into Go struct field jsonPatchOp.op of type string'));
    throwsApi(() => jsonPatch({}, [{ op: 'add', path: {} }]), 400, 'BadRequest', m('object into Go struct field jsonPatchOp.path of type string'));
    throwsApi(() => jsonPatch({}, [{ op: 'add', path: '/a', from: [] }]), 400, 'BadRequest', m('array into Go struct field jsonPatchOp.from of type string'));
    throwsApi(() => jsonPatch({}, [{ op: true }, 1]), 400, 'BadRequest', m('bool into Go struct field jsonPatchOp.op of type string'));
  });

  it('with Ignore: jsonpatch.DecodePatch\'s messages', () => {
    const opts = { fieldValidation: 'Ignore' } as const;
    throwsApi(() => jsonPatch({}, {}, opts), 400, 'BadRequest', 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
    throwsApi(() => jsonPatch({}, 'x', opts), 400, 'BadRequest', 'json: cannot unmarshal string into Go value of type jsonpatch.Patch');
    throwsApi(() => jsonPatch({}, [{ op: 5 }, 1], opts), 400, 'BadRequest', 'json: cannot unmarshal number into Go value of type jsonpatch.Operation');
  });

  it('more than 10000 operations is 413', () => {
    const ops = Array.from({ length: 10001 }, () => ({ op: 'test', path: '/a', value: 1 }));
    throwsApi(() => jsonPatch({ a: 1 }, ops), 413, 'RequestEntityTooLarge',
      'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001');
    assert.deepEqual(jsonPatch({ a: 1 }, ops.slice(1)).object, { a: 1 });
  });

  it('unknown operation members are strict-decoding findings', () => {
    const ops = [{ op: 'add', path: '/x', value: 1, Op: 'x', extra: { y: 1 } }, { op: 'remove', path: '/a', zz: 1, PATH: 2 }];
    const out = jsonPatch({ a: 1, b: 2 }, ops, { fieldValidation: 'Strict' });
    assert.deepEqual(out.object, { b: 2, x: 1 });
    assert.deepEqual(out.strictErrors, [
      'json patch unknown field "[0].Op"', 'json patch unknown field "[0].extra"',
      'json patch unknown field "[1].zz"', 'json patch unknown field "[1].PATH"',
    ]);
    assert.deepEqual(jsonPatch({ a: 1 }, ops, { fieldValidation: 'Ignore' }).strictErrors, []);
  });

  it('applyJsonPatch: Strict findings are the 422 upstream returns; Warn findings become warnings', () => {
    const ops = [{ op: 'add', path: '/x', valu: 1 }];
    throwsApi(() => applyJsonPatch({ a: '<&>' }, ops, { fieldValidation: 'Strict' }), 422, 'Invalid',
      ' "" is invalid: patch: Invalid value: "{\\"a\\":\\"\\\\u003c\\\\u0026\\\\u003e\\",\\"x\\":null}": strict decoding error: json patch unknown field "[0].valu"');
    const warnings: string[] = [];
    assert.deepEqual(applyJsonPatch({ a: 1 }, ops, { warn: (w) => warnings.push(w) }), { a: 1, x: null });
    assert.deepEqual(warnings, ['json patch unknown field "[0].valu"']);
  });
});

describe('jsonPatch: safety', () => {
  it('never mutates the target or the operations', () => {
    const target = frozen({ a: { b: [1, { c: 2 }] }, d: 'e' });
    const ops = frozen([
      { op: 'add', path: '/a/b/1/x', value: { deep: [1] } },
      { op: 'replace', path: '/d', value: { f: 1 } },
      { op: 'move', from: '/a/b/0', path: '/g' },
      { op: 'copy', from: '/a', path: '/h' },
      { op: 'remove', path: '/a/b/0' },
    ]);
    const out = applyJsonPatch(target, ops) as Record<string, any>;
    assert.deepEqual(out, { a: { b: [] }, d: { f: 1 }, g: 1, h: { b: [{ c: 2, x: { deep: [1] } }] } });
    out.h.b[0].x.deep.push(2);
    assert.deepEqual(ops[0], { op: 'add', path: '/a/b/1/x', value: { deep: [1] } });
  });

  it('"__proto__" paths address an ordinary member and never a prototype', () => {
    const ops = JSON.parse('[{"op":"add","path":"/__proto__","value":{"polluted":true}},{"op":"add","path":"/a/__proto__/polluted","value":true},{"op":"add","path":"/constructor","value":1}]');
    throws422(() => applyJsonPatch({ a: {} }, ops)); // /a/__proto__ does not exist
    const out = applyJsonPatch({ a: {} }, [ops[0], ops[2], { op: 'add', path: '/__proto__/polluted', value: 'yes' }]) as Record<string, unknown>;
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(JSON.stringify(out), '{"a":{},"__proto__":{"polluted":"yes"},"constructor":1}');
    throws422(() => applyJsonPatch({}, [{ op: 'remove', path: '/__proto__' }]));
    throws422(() => applyJsonPatch({}, [{ op: 'test', path: '/toString', value: 1 }]));
    assert.deepEqual(applyJsonPatch({}, [{ op: 'test', path: '/constructor', value: null }]), {});
  });
});

describe('goJSON / strictDecodingError', () => {
  it('prints like Go\'s json.Marshal: sorted keys, HTML-safe', () => {
    assert.equal(goJSON({ b: 1, a: ['<x>', { d: '&', c: null }] }), '{"a":["\\u003cx\\u003e",{"c":null,"d":"\\u0026"}],"b":1}');
  });

  it('builds the Invalid status', () => {
    const e = strictDecodingError({ a: 1 }, ['json patch unknown field "[0].x"', 'unknown field "spec.y"']);
    assert.equal(e.code, 422);
    assert.equal(e.message, ' "" is invalid: patch: Invalid value: "{\\"a\\":1}": strict decoding error: json patch unknown field "[0].x", unknown field "spec.y"');
    assert.equal(e.details?.causes?.[0].field, 'patch');
  });
});
