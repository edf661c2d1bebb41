// The few etcd v3 calls the backend makes, behind one small interface so the `etcd3` npm client
// (microsoft/etcd3 over @grpc/grpc-js) could be replaced by a thin grpc-js client without touching
// the store. Its high-level watcher is not used: it drops compact_revision and cannot request
// progress, both of which the watch cache needs, so the cache reads the raw Watch stream.
import {
  Etcd3, type IDuplexStream, type IOptions, type IRangeRequest, type IRangeResponse, type ITxnRequest,
  type ITxnResponse, type IWatchRequest, type IWatchResponse,
} from 'etcd3';

export type { IEvent, IKeyValue, IRangeResponse, ITxnResponse, IWatchResponse } from 'etcd3';

export type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

export interface EtcdClient {
  range(req: IRangeRequest): Promise<IRangeResponse>;
  txn(req: ITxnRequest): Promise<ITxnResponse>;
  /** Compacts the key-value history up to `revision` (physically, so it is done when this resolves). */
  compact(revision: number): Promise<void>;
  /** A new bidirectional Watch stream of its own (progress requests answer per stream). */
  watchStream(): Promise<WatchStream>;
  close(): void;
}

/** How long a unary call may take before it fails (an etcd that stopped answering is unavailable, not a hang). */
export const CALL_TIMEOUT_MS = 5_000;

export interface EtcdConnection {
  /** e.g. ["http://127.0.0.1:2379"]; https:// with `credentials` for TLS. */
  hosts: string[];
  credentials?: IOptions['credentials'];
  dialTimeoutMs?: number;
}

type CallPolicy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

const neverAborted = new AbortController().signal;

/**
 * Runs each call once. etcd3's default retries any call three times on UNAVAILABLE, including a Txn
 * whose first attempt may have committed before the connection dropped: its retry would fail the
 * compare and re-run the try-update on our own write (applied twice) or answer KeyExists to our own
 * create. clientv3 retries a mutation only when it was never sent; here the caller (the client, or
 * the watch cache's loop) retries. The per-host circuit breaker stays as etcd3 sets it.
 */
const callOnce: CallPolicy = {
  _altReturn: undefined as never,
  onSuccess: () => ({ dispose() {} }),
  onFailure: () => ({ dispose() {} }),
  // etcd3 never reads the signal: one that is never aborted serves every call (an AbortController per call cost ~5 µs).
  execute: async (fn) => fn({ signal: neverAborted }),
};

/** The etcd3 client with what the store needs from gRPC: no message size cap, keepalive to notice a dead peer. */
export function connectEtcd(conn: EtcdConnection): EtcdClient {
  return etcd3Client(new Etcd3({
    hosts: conn.hosts,
    credentials: conn.credentials,
    dialTimeout: conn.dialTimeoutMs ?? CALL_TIMEOUT_MS,
    faultHandling: { global: callOnce },
    grpcOptions: {
      // A stored object may be 3 MiB and a watch event carries it twice (prev_kv); pages carry many.
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      // etcd's server refuses pings more often than every 5 s (--grpc-keepalive-min-time).
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 1,
    },
  }));
}

/** The interface over an existing etcd3 client (its options are the caller's). */
export function etcd3Client(etcd: Etcd3): EtcdClient {
  const deadline = () => ({ deadline: Date.now() + CALL_TIMEOUT_MS });
  return {
    range: (req) => etcd.kv.range(req, deadline()),
    txn: (req) => etcd.kv.txn(req, deadline()),
    compact: async (revision) => { await etcd.kv.compact({ revision, physical: true }, deadline()); },
    watchStream: () => etcd.watchClient.watch(),
    close: () => etcd.close(),
  };
}
