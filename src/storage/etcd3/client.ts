// The few etcd v3 calls the backend makes, on @grpc/grpc-js with the messages encoded here
// (messages.ts). A general client (microsoft/etcd3) parses etcd's .proto files and generates its
// codecs when loaded, ~0.1 s of every start, and its watcher drops compact_revision and cannot ask
// for progress, which the watch cache needs; so the cache reads the raw Watch stream.
import { Client, credentials as grpcCredentials, status, type ChannelCredentials, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import {
  decode, encode, type RangeRequest, type RangeResponse, type TxnRequest, type TxnResponse, type WatchRequest, type WatchResponse,
} from './messages.js';

export type { Event as IEvent, KeyValue as IKeyValue, RangeResponse as IRangeResponse, TxnResponse as ITxnResponse, WatchResponse as IWatchResponse } from './messages.js';

export type WatchStream = ClientDuplexStream<WatchRequest, WatchResponse>;

export interface EtcdClient {
  range(req: RangeRequest): Promise<RangeResponse>;
  txn(req: TxnRequest): Promise<TxnResponse>;
  /** Compacts the key-value history up to `revision` (physically, so it is done when this resolves). */
  compact(revision: number): Promise<void>;
  /** A new bidirectional Watch stream of its own (progress requests answer per stream). */
  watchStream(): Promise<WatchStream>;
  close(): void;
}

/** How long a unary call may take before it fails (an etcd that stopped answering is unavailable, not a hang). */
export const CALL_TIMEOUT_MS = 5_000;

export interface EtcdTls {
  rootCertificate: Buffer;
  certChain?: Buffer;
  privateKey?: Buffer;
}

export interface EtcdConnection {
  /** e.g. ["http://127.0.0.1:2379"]; https://, or `credentials`, for TLS. */
  hosts: string[];
  credentials?: EtcdTls;
}

const CHANNEL_OPTIONS = {
  // A stored object may be 3 MiB and a watch event carries it twice (prev_kv); pages carry many.
  'grpc.max_receive_message_length': -1,
  'grpc.max_send_message_length': -1,
  // etcd's server refuses pings more often than every 5 s (--grpc-keepalive-min-time).
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  // Reconnect to a member that came back within 2 s (gRPC's default backoff grows to 120 s).
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

/**
 * One gRPC channel per etcd member. Calls go to one member until it is unreachable, then to the next.
 * Each call runs once: a Txn whose first attempt may have committed before the connection dropped
 * must not be sent again (its retry would fail the compare and re-run the try-update on our own
 * write); the caller retries (the REST client, or the watch cache's loop).
 */
export function connectEtcd(conn: EtcdConnection): EtcdClient {
  if (conn.hosts.length === 0) throw new Error('no etcd servers');
  const members = conn.hosts.map((h) => new Client(target(h), credentialsFor(h, conn.credentials), CHANNEL_OPTIONS));
  // Replicas spread over the members, as etcd's clients do.
  let at = Math.floor(Math.random() * members.length);
  const pick = () => members[at];
  /** An unreachable member's calls move to the next one. */
  const unreachable = (m: Client) => {
    if (members[at] === m) at = (at + 1) % members.length;
  };
  const failed = (m: Client, e: ServiceError) => {
    if (e.code === status.UNAVAILABLE) unreachable(m);
  };
  const unary = <Req, Res>(method: string, ser: (r: Req) => Buffer, de: (b: Buffer) => Res) => (req: Req): Promise<Res> =>
    new Promise((resolve, reject) => {
      const m = pick();
      m.makeUnaryRequest(method, ser, de, req, { deadline: Date.now() + CALL_TIMEOUT_MS }, (e, res) => {
        if (e) {
          failed(m, e);
          reject(e);
        } else {
          resolve(res as Res);
        }
      });
    });
  const compact = unary('/etcdserverpb.KV/Compact', encode.compaction, decode.compaction);
  return {
    range: unary('/etcdserverpb.KV/Range', encode.range, decode.range),
    txn: unary('/etcdserverpb.KV/Txn', encode.txn, decode.txn),
    compact: async (revision) => { await compact({ revision, physical: true }); },
    watchStream: async () => {
      const m = pick();
      // A stream opened before the member is connected would fail at once: wait for it (a call's time at
      // most), so a cache resumes as soon as etcd is back rather than a retry delay later.
      await new Promise<void>((resolve, reject) => m.waitForReady(Date.now() + CALL_TIMEOUT_MS, (e) => {
        if (!e) return resolve();
        unreachable(m);
        reject(new Error(`etcd: ${e.message}`));
      }));
      const stream = m.makeBidiStreamRequest('/etcdserverpb.Watch/Watch', encode.watch, decode.watch);
      stream.on('error', (e: ServiceError) => failed(m, e));
      return stream;
    },
    close: () => { for (const m of members) m.close(); },
  };
}

/** gRPC's target for an etcd client URL: host:port ("[::1]:2379" for IPv6). */
function target(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** TLS when client files are given or the URL is https:// (the system's roots then verify etcd). */
function credentialsFor(url: string, tls: EtcdTls | undefined): ChannelCredentials {
  if (tls) return grpcCredentials.createSsl(tls.rootCertificate, tls.privateKey ?? null, tls.certChain ?? null);
  return url.startsWith('https://') ? grpcCredentials.createSsl() : grpcCredentials.createInsecure();
}
