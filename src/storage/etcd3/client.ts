// The few etcd v3 calls the backend makes, over our own gRPC transport (grpc.ts) with the messages
// encoded here (messages.ts). A general client (microsoft/etcd3) parses etcd's .proto files and
// generates its codecs when loaded, ~0.1 s of every start, and its watcher drops compact_revision and
// cannot ask for progress, which the watch cache needs; so the cache reads the raw Watch stream.
import { EventEmitter } from 'node:events';
import { GrpcChannel, GrpcError, GrpcStatus, type GrpcStream, type GrpcTls } from './grpc.js';
import {
  decode, encode, type RangePage, type RangeRequest, type RangeResponse, type TxnRequest, type TxnResponse, type WatchRequest, type WatchResponse,
} from './messages.js';

export type { Event as IEvent, KeyValue as IKeyValue, RangeResponse as IRangeResponse, TxnResponse as ITxnResponse, WatchResponse as IWatchResponse } from './messages.js';

/** A Watch stream: responses as 'data', then one 'end' or 'error'; cancel() ends it with a CANCELLED 'error'. */
export interface WatchStream {
  write(req: WatchRequest): void;
  cancel(): void;
  on(event: 'data', listener: (res: WatchResponse) => void): this;
  on(event: 'error', listener: (e: Error) => void): this;
  on(event: 'end', listener: () => void): this;
}

export interface EtcdClient {
  range(req: RangeRequest): Promise<RangeResponse>;
  /** A Range whose key-values are decoded one at a time, when read (for pages too big to decode in one turn). */
  rangePage(req: RangeRequest): Promise<RangePage>;
  txn(req: TxnRequest): Promise<TxnResponse>;
  /** Compacts the key-value history up to `revision` (physically, so it is done when this resolves). */
  compact(revision: number): Promise<void>;
  /** A new bidirectional Watch stream of its own (progress requests answer per stream). */
  watchStream(): Promise<WatchStream>;
  close(): void;
}

/** How long a unary call may take before it fails (an etcd that stopped answering is unavailable, not a hang). */
export const CALL_TIMEOUT_MS = 5_000;
const COMPACT_TIMEOUT_MS = 5 * 60_000;

export type EtcdTls = GrpcTls;

export interface EtcdConnection {
  /** e.g. ["http://127.0.0.1:2379"]; TLS with `credentials`, or for https:// (Node's roots then verify etcd). */
  hosts: string[];
  credentials?: EtcdTls;
}

const MOVE_ON = new Set<number>([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.CANCELLED]);

/**
 * One connection per etcd member. Calls go to one member until it is unreachable, then to the next.
 * Each call runs once: a Txn whose first attempt may have committed before the connection dropped
 * must not be sent again (its retry would fail the compare and re-run the try-update on our own
 * write); the caller retries (the REST client, or the watch cache's loop).
 */
export function connectEtcd(conn: EtcdConnection): EtcdClient {
  if (conn.hosts.length === 0) throw new Error('no etcd servers');
  const members = conn.hosts.map((h) => new GrpcChannel(h, conn.credentials));
  // Replicas spread over the members, as etcd's clients do.
  let at = Math.floor(Math.random() * members.length);
  /**
   * A member that is unreachable, does not answer in time, or has no leader: calls move to the next
   * one (clientv3 does the same through its balancer). Safe because no call is retried here.
   */
  const failed = (m: GrpcChannel, e: unknown) => {
    if (e instanceof GrpcError && MOVE_ON.has(e.code) && members[at] === m) at = (at + 1) % members.length;
  };
  const unary = <Req, Res>(path: string, ser: (r: Req) => Buffer, de: (b: Buffer) => Res, timeoutMs = CALL_TIMEOUT_MS) => async (req: Req): Promise<Res> => {
    const m = members[at];
    let res: Buffer;
    try {
      res = await m.unary(path, ser(req), timeoutMs);
    } catch (e) {
      failed(m, e);
      throw e;
    }
    return de(res);
  };
  // A physical compaction returns once etcd has compacted, which takes long on a big history (kube gives it no deadline).
  const compact = unary('/etcdserverpb.KV/Compact', encode.compaction, decode.compaction, COMPACT_TIMEOUT_MS);
  return {
    range: unary('/etcdserverpb.KV/Range', encode.range, decode.range),
    rangePage: unary('/etcdserverpb.KV/Range', encode.range, decode.rangePage),
    txn: unary('/etcdserverpb.KV/Txn', encode.txn, decode.txn),
    compact: async (revision) => { await compact({ revision, physical: true }); },
    watchStream: async () => {
      const m = members[at];
      // A stream opened before the member is connected would fail at once: wait for it (a call's time at
      // most), so a cache resumes as soon as etcd is back rather than a retry delay later.
      try {
        await m.ready(CALL_TIMEOUT_MS);
      } catch (e) {
        failed(m, e);
        throw e;
      }
      return watchStream(m.stream('/etcdserverpb.Watch/Watch'), (e) => failed(m, e));
    },
    close: () => { for (const m of members) m.close(); },
  };
}

/** The Watch stream over a gRPC stream: messages decoded; one that cannot be decoded ends it with an error. */
function watchStream(s: GrpcStream, onError: (e: Error) => void): WatchStream {
  let ended = false;
  const out = Object.assign(new EventEmitter(), {
    write: (req: WatchRequest) => s.write(encode.watch(req)),
    cancel: () => s.cancel(),
  });
  const fail = (e: Error) => {
    if (ended) return;
    ended = true;
    // A stream its owner cancelled before listening (stopped while it was being opened) has no one to tell.
    if (!s.cancelled || out.listenerCount('error') > 0) out.emit('error', e);
  };
  s.on('message', (m: Buffer) => {
    if (ended) return;
    let res: WatchResponse;
    try {
      res = decode.watch(m);
    } catch (e) {
      fail(new GrpcError(GrpcStatus.INTERNAL, `a watch response that cannot be decoded: ${(e as Error).message}`));
      s.cancel();
      return;
    }
    out.emit('data', res);
  });
  s.on('error', (e: Error) => {
    if (!s.cancelled) onError(e);
    fail(e);
  });
  s.on('end', () => {
    if (ended) return;
    ended = true;
    out.emit('end');
  });
  return out as WatchStream;
}
