// The etcd v3 messages the backend encodes and decodes by hand (src/storage/etcd3/messages.ts), checked
// against an independent implementation: protobufjs reading etcd's own .proto files (as shipped with the
// etcd3 npm client). Requests we encode must decode there to the same fields (oneof members set to 0
// included); responses encoded there, with fields we skip, must decode here to the same values; any
// bytes at all either decode or throw an Error.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import {
  type Compare, decode, encode, type KeyValue, type RangeRequest, type RequestOp, type TxnRequest, type WatchRequest,
} from '../../src/storage/etcd3/messages.js';
import { ProtoReader, ProtoWriter } from '../../src/storage/etcd3/protobuf.js';

const protoDir = join(dirname(createRequire(import.meta.url).resolve('etcd3/package.json')), 'proto');
const root = new protobuf.Root().loadSync(join(protoDir, 'rpc.proto'), { keepCase: true });
const type = (name: string) => root.lookupType(name);
/** protobufjs's view of `bytes`: only the fields on the wire, int64 as numbers, enums by name, oneofs named. */
const theirs = (name: string, b: Buffer): unknown => {
  const t = type(name);
  return t.toObject(t.decode(b), { longs: Number, enums: String, oneofs: true });
};
const encodeTheirs = (name: string, o: object): Buffer => {
  const t = type(name);
  return Buffer.from(t.encode(t.fromObject(o)).finish());
};

const bytes = fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a));
const someBytes = fc.uint8Array({ minLength: 1, maxLength: 24 }).map((a) => Buffer.from(a));
const int64 = fc.oneof(fc.constant(0), fc.nat({ max: 2 ** 31 }), fc.maxSafeNat());
/** What etcd may send in an int64: negatives too (a rejected watch's id is -1). */
const signed64 = fc.oneof(int64, fc.constant(-1), fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }));
/** Records with Object's prototype, as decoded messages have. */
const plain = { noNullPrototype: true };
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

/** Drops what proto3 leaves off the wire: undefined, 0, false, empty bytes, empty arrays (not inside oneofs). */
function onWire(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === 0 || v === false || (Buffer.isBuffer(v) && v.length === 0) || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = v;
  }
  return out;
}

const rangeRequest: fc.Arbitrary<RangeRequest> = fc.record({
  key: bytes, range_end: opt(bytes), limit: opt(int64), revision: opt(int64),
  serializable: opt(fc.boolean()), keys_only: opt(fc.boolean()), count_only: opt(fc.boolean()),
});
const compare: fc.Arbitrary<Compare> = fc.record({
  key: bytes, result: fc.constantFrom('Equal', 'Greater', 'Less', 'NotEqual'), which: fc.constantFrom('Version', 'Create', 'Mod'), n: int64,
}).map(({ key, result, which, n }): Compare => which === 'Version' ? { key, result, target: which, version: n }
  : which === 'Create' ? { key, result, target: which, create_revision: n } : { key, result, target: which, mod_revision: n });
const requestOp: fc.Arbitrary<RequestOp> = fc.oneof(
  rangeRequest.map((r) => ({ request_range: r })),
  fc.record({ key: bytes, value: bytes, prev_kv: opt(fc.boolean()) }).map((p) => ({ request_put: p })),
  fc.record({ key: bytes, range_end: opt(bytes), prev_kv: opt(fc.boolean()) }).map((d) => ({ request_delete_range: d })),
);
const txnRequest: fc.Arbitrary<TxnRequest> = fc.record({
  compare: opt(fc.array(compare, { maxLength: 3 })), success: opt(fc.array(requestOp, { maxLength: 3 })), failure: opt(fc.array(requestOp, { maxLength: 3 })),
});
const watchRequest: fc.Arbitrary<WatchRequest> = fc.oneof(
  fc.record({ key: bytes, range_end: opt(bytes), start_revision: opt(int64), progress_notify: opt(fc.boolean()), prev_kv: opt(fc.boolean()) })
    .map((c) => ({ create_request: c })),
  fc.record({ watch_id: int64 }).map((c) => ({ cancel_request: c })),
  fc.constant({ progress_request: {} }),
);

const expectedCompare = (c: Compare) => {
  const member = c.target === 'Version' ? 'version' : c.target === 'Create' ? 'create_revision' : 'mod_revision';
  const value = c.target === 'Version' ? c.version : c.target === 'Create' ? c.create_revision : c.mod_revision;
  return { ...onWire({ key: c.key, result: c.result === 'Equal' ? undefined : c.result, target: c.target === 'Version' ? undefined : c.target }), [member]: value, target_union: member };
};
const expectedOp = (op: RequestOp) => {
  if ('request_range' in op) return { request_range: onWire({ ...op.request_range }), request: 'request_range' };
  if ('request_put' in op) return { request_put: onWire({ ...op.request_put }), request: 'request_put' };
  return { request_delete_range: onWire({ ...op.request_delete_range }), request: 'request_delete_range' };
};

describe('etcd v3 messages against protobufjs and etcd\'s .proto files', () => {
  it('requests: what we encode decodes there to the same fields', () => {
    fc.assert(fc.property(rangeRequest, (r) => {
      assert.deepEqual(theirs('etcdserverpb.RangeRequest', encode.range(r)), onWire({ ...r }));
    }));
    fc.assert(fc.property(txnRequest, (t) => {
      assert.deepEqual(theirs('etcdserverpb.TxnRequest', encode.txn(t)), onWire({
        compare: t.compare?.map(expectedCompare), success: t.success?.map(expectedOp), failure: t.failure?.map(expectedOp),
      }));
    }));
    fc.assert(fc.property(watchRequest, (w) => {
      const expected = 'create_request' in w ? { create_request: onWire({ ...w.create_request }), request_union: 'create_request' }
        : 'cancel_request' in w ? { cancel_request: onWire({ ...w.cancel_request }), request_union: 'cancel_request' }
          : { progress_request: {}, request_union: 'progress_request' };
      assert.deepEqual(theirs('etcdserverpb.WatchRequest', encode.watch(w)), expected);
    }));
    fc.assert(fc.property(int64, fc.boolean(), (revision, physical) => {
      assert.deepEqual(theirs('etcdserverpb.CompactionRequest', encode.compaction({ revision, physical })), onWire({ revision, physical }));
    }));
  });

  it('a compare against 0 still names its target (etcd compares against the oneof member that is set)', () => {
    const b = encode.txn({ compare: [{ key: Buffer.from('k'), target: 'Create', result: 'Equal', create_revision: 0 }] });
    assert.deepEqual(theirs('etcdserverpb.TxnRequest', b), { compare: [{ key: Buffer.from('k'), target: 'Create', create_revision: 0, target_union: 'create_revision' }] });
  });

  const header = fc.record({ cluster_id: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), member_id: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), revision: signed64, raft_term: fc.nat() }, plain);
  const keyValue = fc.record({ key: bytes, create_revision: signed64, mod_revision: signed64, version: signed64, value: bytes, lease: signed64 }, plain);
  const rangeResponse = fc.record({ header, kvs: fc.array(keyValue, { maxLength: 4 }), more: fc.boolean(), count: signed64 }, plain);
  /** protobufjs takes uint64s beyond 2^53 as decimal strings. */
  const pbHeader = (h: { cluster_id: bigint; member_id: bigint; revision: number; raft_term: number }) =>
    ({ ...h, cluster_id: h.cluster_id.toString(), member_id: h.member_id.toString() });
  const pbRange = (r: { header: Parameters<typeof pbHeader>[0]; kvs: KeyValue[]; more: boolean; count: number }) => ({ ...r, header: pbHeader(r.header) });
  const ours = <T extends { header: { revision: number } }>(r: T & { header: { revision: number } }) => ({ ...r, header: { revision: r.header.revision } });

  it('responses: what protobufjs encodes (with fields we skip) decodes here to the same values', () => {
    fc.assert(fc.property(rangeResponse, (r) => {
      assert.deepEqual(decode.range(encodeTheirs('etcdserverpb.RangeResponse', pbRange(r))), ours(r));
    }));
    const responseOp = fc.oneof(
      rangeResponse.map((r) => ({ theirs: { response_range: pbRange(r) }, ours: { response_range: ours(r) } })),
      header.map((h) => ({ theirs: { response_put: { header: pbHeader(h), prev_kv: { key: Buffer.from('x') } } }, ours: {} })),
      header.map((h) => ({ theirs: { response_delete_range: { header: pbHeader(h), deleted: 1 } }, ours: {} })),
    );
    fc.assert(fc.property(header, fc.boolean(), fc.array(responseOp, { maxLength: 3 }), (h, succeeded, ops) => {
      const b = encodeTheirs('etcdserverpb.TxnResponse', { header: pbHeader(h), succeeded, responses: ops.map((o) => o.theirs) });
      assert.deepEqual(decode.txn(b), { header: { revision: h.revision }, succeeded, responses: ops.map((o) => o.ours) });
    }));
    const event = fc.record({ type: fc.constantFrom('Put' as const, 'Delete' as const), kv: keyValue, prev_kv: opt(keyValue) }, plain);
    const watchResponse = fc.record({
      header, watch_id: signed64, created: fc.boolean(), canceled: fc.boolean(), compact_revision: signed64,
      cancel_reason: fc.string({ unit: 'grapheme' }), fragment: fc.boolean(), events: fc.array(event, { maxLength: 4 }),
    }, plain);
    fc.assert(fc.property(watchResponse, (w) => {
      const b = encodeTheirs('etcdserverpb.WatchResponse', { ...w, header: pbHeader(w.header) });
      const { fragment: _skipped, ...rest } = w;
      const events = w.events.map((e) => (e.prev_kv ? e : { type: e.type, kv: e.kv }));
      assert.deepEqual(decode.watch(b), { ...ours(rest), events });
    }));
  });

  it('a range page reads each key-value when asked, to what decode.range gives; past its end is a RangeError', () => {
    fc.assert(fc.property(rangeResponse, (r) => {
      const b = encodeTheirs('etcdserverpb.RangeResponse', pbRange(r));
      const page = decode.rangePage(b);
      const { kvs, ...rest } = decode.range(b);
      assert.deepEqual({ ...page, kvs: Array.from({ length: page.kvs.length }, (_, i) => page.kvs.at(i)) }, { ...rest, kvs });
      assert.throws(() => page.kvs.at(page.kvs.length), RangeError);
      assert.throws(() => page.kvs.at(-1), RangeError);
    }));
    // A key-value whose own fields are broken (a 5-byte key in 2 bytes) fails when it is read, not before.
    const broken = decode.rangePage(Buffer.from([0x12, 0x02, 0x0a, 0x05]));
    assert.equal(broken.kvs.length, 1);
    assert.throws(() => broken.kvs.at(0), /protobuf: truncated/);
  });

  it('any bytes decode or throw an Error; a truncated message throws', () => {
    const pageRead = (b: Buffer) => { const { kvs } = decode.rangePage(b); for (let i = 0; i < kvs.length; i++) kvs.at(i); };
    for (const d of [decode.range, pageRead, decode.txn, decode.watch, decode.compaction]) {
      fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (a) => {
        try {
          d(Buffer.from(a));
        } catch (e) {
          assert.ok(e instanceof Error, String(e));
        }
      }));
    }
    fc.assert(fc.property(rangeResponse.filter((r) => r.kvs.length > 0), fc.nat(), (r, cut) => {
      const b = encodeTheirs('etcdserverpb.RangeResponse', pbRange(r));
      const n = cut % b.length; // a strict prefix
      const prefix = b.subarray(0, n);
      // A prefix that ends exactly between two top-level fields is a valid, shorter message.
      try {
        decode.range(prefix);
      } catch (e) {
        assert.match((e as Error).message, /^protobuf: /);
      }
    }));
    assert.throws(() => decode.range(Buffer.from([0x12, 0x05, 0x0a])), /protobuf: truncated/);
    assert.throws(() => decode.range(Buffer.from([0x18, 0xff, 0xff])), /protobuf: truncated varint/);
    assert.throws(() => decode.range(Buffer.from([0x18, ...Array<number>(11).fill(0xff)])), /longer than 10 bytes/);
  });

  it('varints: every safe integer round-trips; integers up to int64\'s limit are sent; a negative, fractional or larger one is refused', () => {
    fc.assert(fc.property(fc.maxSafeNat(), (n) => {
      const b = new ProtoWriter().varint(4, n, true).finish();
      const r = new ProtoReader(b);
      assert.equal(r.next(), 4);
      assert.equal(r.int(), n);
      assert.equal(r.next(), 0);
    }));
    for (const bad of [-1, 2 ** 63, 2 ** 64, 1.5, Number.NaN, Infinity]) {
      assert.throws(() => new ProtoWriter().varint(1, bad), RangeError, String(bad));
    }
    // A revision past 2^53 (a client's resourceVersion) is still sent, as the float it is, for etcd to refuse; int64's limit is the end.
    for (const big of [2 ** 53, 2 ** 60, 2 ** 63 - 2 ** 10]) {
      assert.deepEqual(theirs('etcdserverpb.RangeRequest', encode.range({ key: Buffer.from('k'), revision: big })), { key: Buffer.from('k'), revision: big });
    }
  });
});
