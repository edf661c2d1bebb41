// The etcd v3 API messages the store sends and reads (etcdserverpb rpc.proto, mvccpb kv.proto), with
// the proto's field names and numbers. int64s are numbers. Fields the store never reads are skipped
// when decoding (cluster_id, member_id and raft_term, whose uint64s a number cannot hold exactly).
import { ProtoReader, ProtoWriter } from './protobuf.js';

export interface ResponseHeader { revision: number }

export interface KeyValue {
  key: Buffer;
  create_revision: number;
  mod_revision: number;
  /** How many times the key was written since it was created (0: deleted). */
  version: number;
  value: Buffer;
  lease: number;
}

export interface Event { type: 'Put' | 'Delete'; kv: KeyValue; prev_kv?: KeyValue }

export interface RangeRequest {
  key: Buffer;
  range_end?: Buffer;
  limit?: number;
  /** 0 or absent: the newest. */
  revision?: number;
  serializable?: boolean;
  keys_only?: boolean;
  count_only?: boolean;
}

export interface RangeResponse { header: ResponseHeader; kvs: KeyValue[]; more: boolean; count: number }

/**
 * A Range's key-values, each decoded when asked for. The watch cache's fill reads pages of up to 10,000:
 * decoded at once, the first (cold) page held the event loop ~90 ms; one by one, in its paced slices.
 */
export class KeyValueList {
  /** Start and end of each KeyValue message in `buf`. */
  constructor(private readonly buf: Buffer, private readonly spans: number[]) {}

  get length(): number { return this.spans.length / 2; }

  at(i: number): KeyValue {
    if (!(i >= 0 && i < this.length)) throw new RangeError(`key-value ${i} of ${this.length}`);
    return readKeyValue(new ProtoReader(this.buf, this.spans[2 * i], this.spans[2 * i + 1]));
  }
}

export interface RangePage { header: ResponseHeader; kvs: KeyValueList; more: boolean; count: number }

export interface PutRequest { key: Buffer; value: Buffer; prev_kv?: boolean }
export interface DeleteRangeRequest { key: Buffer; range_end?: Buffer; prev_kv?: boolean }

export type RequestOp =
  | { request_range: RangeRequest }
  | { request_put: PutRequest }
  | { request_delete_range: DeleteRangeRequest };

/** A Txn comparison; its target decides which of the oneof's values it compares against. */
export type Compare = { key: Buffer; result: 'Equal' | 'Greater' | 'Less' | 'NotEqual' } & (
  | { target: 'Version'; version: number }
  | { target: 'Create'; create_revision: number }
  | { target: 'Mod'; mod_revision: number }
);

export interface TxnRequest { compare?: Compare[]; success?: RequestOp[]; failure?: RequestOp[] }

/** One Txn response op; only a range's result is read (a put's or a delete's carries nothing the store uses). */
export interface ResponseOp { response_range?: RangeResponse }

export interface TxnResponse { header: ResponseHeader; succeeded: boolean; responses: ResponseOp[] }

export interface CompactionRequest { revision: number; physical?: boolean }

export interface WatchCreateRequest {
  key: Buffer;
  range_end?: Buffer;
  start_revision?: number;
  progress_notify?: boolean;
  prev_kv?: boolean;
}

export type WatchRequest =
  | { create_request: WatchCreateRequest }
  | { cancel_request: { watch_id: number } }
  | { progress_request: Record<string, never> };

export interface WatchResponse {
  header: ResponseHeader;
  watch_id: number;
  created: boolean;
  canceled: boolean;
  compact_revision: number;
  cancel_reason: string;
  events: Event[];
}

// ---- encoding (requests)

const COMPARE_RESULT = { Equal: 0, Greater: 1, Less: 2, NotEqual: 3 } as const;
const COMPARE_TARGET = { Version: 0, Create: 1, Mod: 2 } as const;

function writeRange(w: ProtoWriter, r: RangeRequest): void {
  w.bytes(1, r.key).bytes(2, r.range_end).varint(3, r.limit).varint(4, r.revision)
    .varint(7, r.serializable).varint(8, r.keys_only).varint(9, r.count_only);
}

function writeCompare(w: ProtoWriter, c: Compare): void {
  w.varint(1, COMPARE_RESULT[c.result]).varint(2, COMPARE_TARGET[c.target]).bytes(3, c.key);
  // A oneof member is sent even when 0: etcd compares against the member that is set.
  switch (c.target) {
    case 'Version': w.varint(4, c.version, true); break;
    case 'Create': w.varint(5, c.create_revision, true); break;
    case 'Mod': w.varint(6, c.mod_revision, true); break;
  }
}

function writeRequestOp(w: ProtoWriter, op: RequestOp): void {
  if ('request_range' in op) w.message(1, op.request_range, writeRange);
  else if ('request_put' in op) w.message(2, op.request_put, (m, p) => { m.bytes(1, p.key).bytes(2, p.value).varint(4, p.prev_kv); });
  else w.message(3, op.request_delete_range, (m, d) => { m.bytes(1, d.key).bytes(2, d.range_end).varint(3, d.prev_kv); });
}

function writeTxn(w: ProtoWriter, t: TxnRequest): void {
  for (const c of t.compare ?? []) w.message(1, c, writeCompare);
  for (const op of t.success ?? []) w.message(2, op, writeRequestOp);
  for (const op of t.failure ?? []) w.message(3, op, writeRequestOp);
}

function writeWatch(w: ProtoWriter, r: WatchRequest): void {
  if ('create_request' in r) {
    w.message(1, r.create_request, (m, c) => {
      m.bytes(1, c.key).bytes(2, c.range_end).varint(3, c.start_revision).varint(4, c.progress_notify).varint(6, c.prev_kv);
    });
  } else if ('cancel_request' in r) {
    w.message(2, r.cancel_request, (m, c) => { m.varint(1, c.watch_id); });
  } else {
    w.message(3, r.progress_request, () => {});
  }
}

const encoder = <T>(write: (w: ProtoWriter, v: T) => void) => (v: T): Buffer => {
  const w = new ProtoWriter();
  write(w, v);
  return w.finish();
};

export const encode = {
  range: encoder(writeRange),
  txn: encoder(writeTxn),
  compaction: encoder((w, c: CompactionRequest) => { w.varint(1, c.revision).varint(2, c.physical); }),
  watch: encoder(writeWatch),
};

// ---- decoding (responses)

const EMPTY = Buffer.alloc(0);

function readHeader(r: ProtoReader): ResponseHeader {
  const h: ResponseHeader = { revision: 0 };
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 3) h.revision = r.int();
    else r.skip();
  }
  return h;
}

function readKeyValue(r: ProtoReader): KeyValue {
  const kv: KeyValue = { key: EMPTY, create_revision: 0, mod_revision: 0, version: 0, value: EMPTY, lease: 0 };
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1: kv.key = r.bytes(); break;
      case 2: kv.create_revision = r.int(); break;
      case 3: kv.mod_revision = r.int(); break;
      case 4: kv.version = r.int(); break;
      case 5: kv.value = r.bytes(); break;
      case 6: kv.lease = r.int(); break;
      default: r.skip();
    }
  }
  return kv;
}

function readRangePage(r: ProtoReader): RangePage {
  let header: ResponseHeader = { revision: 0 };
  const spans: number[] = [];
  let more = false;
  let count = 0;
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1: header = r.message(readHeader); break;
      case 2: spans.push(...r.span()); break;
      case 3: more = r.bool(); break;
      case 4: count = r.int(); break;
      default: r.skip();
    }
  }
  return { header, kvs: new KeyValueList(r.buffer, spans), more, count };
}

function readRangeResponse(r: ProtoReader): RangeResponse {
  const { kvs, ...rest } = readRangePage(r);
  return { ...rest, kvs: Array.from({ length: kvs.length }, (_, i) => kvs.at(i)) };
}

function readResponseOp(r: ProtoReader): ResponseOp {
  const op: ResponseOp = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) op.response_range = r.message(readRangeResponse);
    else r.skip();
  }
  return op;
}

function readTxnResponse(r: ProtoReader): TxnResponse {
  const res: TxnResponse = { header: { revision: 0 }, succeeded: false, responses: [] };
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1: res.header = r.message(readHeader); break;
      case 2: res.succeeded = r.bool(); break;
      case 3: res.responses.push(r.message(readResponseOp)); break;
      default: r.skip();
    }
  }
  return res;
}

function readEvent(r: ProtoReader): Event {
  let type: Event['type'] = 'Put';
  let kv: KeyValue | undefined;
  let prev: KeyValue | undefined;
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1: type = r.int() === 1 ? 'Delete' : 'Put'; break;
      case 2: kv = r.message(readKeyValue); break;
      case 3: prev = r.message(readKeyValue); break;
      default: r.skip();
    }
  }
  const ev: Event = { type, kv: kv ?? readKeyValue(new ProtoReader(EMPTY)) };
  if (prev) ev.prev_kv = prev;
  return ev;
}

function readWatchResponse(r: ProtoReader): WatchResponse {
  const res: WatchResponse = { header: { revision: 0 }, watch_id: 0, created: false, canceled: false, compact_revision: 0, cancel_reason: '', events: [] };
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1: res.header = r.message(readHeader); break;
      case 2: res.watch_id = r.int(); break;
      case 3: res.created = r.bool(); break;
      case 4: res.canceled = r.bool(); break;
      case 5: res.compact_revision = r.int(); break;
      case 6: res.cancel_reason = r.string(); break;
      case 11: res.events.push(r.message(readEvent)); break;
      default: r.skip();
    }
  }
  return res;
}

const decoder = <T>(read: (r: ProtoReader) => T) => (b: Buffer): T => read(new ProtoReader(b));

export const decode = {
  range: decoder(readRangeResponse),
  rangePage: decoder(readRangePage),
  txn: decoder(readTxnResponse),
  compaction: decoder((r) => { while (r.next() !== 0) r.skip(); }),
  watch: decoder(readWatchResponse),
};
