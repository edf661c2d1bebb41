// gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md), as much as an etcd client needs: unary calls and
// bidirectional streams on one connection per etcd member, with deadlines, keepalive pings and TLS.
// Why not @grpc/grpc-js: its layers (interceptors, resolver, load balancer, retries) cost ~190 µs of
// CPU per call against ~80 µs for the same call here, and ~40 ms to load at every start.
import { EventEmitter } from 'node:events';
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type SecureClientSessionOptions } from 'node:http2';

/** gRPC status codes used here (the rest are reported by number). */
export const GrpcStatus = {
  OK: 0, CANCELLED: 1, UNKNOWN: 2, DEADLINE_EXCEEDED: 4, PERMISSION_DENIED: 7, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14, UNAUTHENTICATED: 16,
} as const;

const STATUS_NAMES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS',
  'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL',
  'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

/** A call's failure: the message reads as gRPC's own ("9 FAILED_PRECONDITION: etcdserver: ..."). */
export class GrpcError extends Error {
  constructor(readonly code: number, readonly details: string) {
    super(`${code} ${STATUS_NAMES[code] ?? 'UNKNOWN'}: ${details}`);
    this.name = 'GrpcError';
  }
}

export interface GrpcTls {
  rootCertificate: Buffer;
  certChain?: Buffer;
  privateKey?: Buffer;
}

/** etcd's server refuses pings more often than every 5 s (--grpc-keepalive-min-time). */
const KEEPALIVE_MS = 10_000;
const KEEPALIVE_TIMEOUT_MS = 5_000;
/** Per stream and per connection: a page of a big list arrives without waiting on window updates. */
const STREAM_WINDOW = 4 * 1024 * 1024;
const SESSION_WINDOW = 16 * 1024 * 1024;
/** How long a connection may take to be made (TCP, TLS, HTTP/2 preface). */
const CONNECT_TIMEOUT_MS = 5_000;
/** Retries of a connection while someone waits for it to be ready. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 1_000;

/** One etcd member: a lazily (re)made HTTP/2 connection shared by every call. */
export class GrpcChannel {
  private session: ClientHttp2Session | undefined;
  private connected = false;
  private closed = false;
  /** Streams open per session: a connection holds the process only while it has some. */
  private readonly active = new WeakMap<ClientHttp2Session, number>();
  private lastError: string | undefined;
  private readonly readyWaiters = new Set<() => void>();

  private readonly url: string;

  /** `url`: http(s)://host[:port]; without a port, 443 (as gRPC's default, which etcd's Go client uses). */
  constructor(url: string, private readonly tls: GrpcTls | undefined) {
    const u = new URL(url);
    this.url = `${tls ? 'https:' : u.protocol}//${u.hostname}:${u.port || '443'}`;
  }

  /** One request, one response message; rejects with a GrpcError. */
  unary(path: string, message: Buffer, timeoutMs: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let got: Buffer | undefined;
      let extra = false;
      const call = this.open(path, timeoutMs, {
        message: (m) => { if (got) extra = true; got = m; },
        end: (e) => {
          if (e) reject(e);
          else if (!got || extra) reject(new GrpcError(GrpcStatus.INTERNAL, got ? 'more than one response message' : 'no response message'));
          else resolve(got);
        },
      });
      call?.end(frame(message));
    });
  }

  /** A bidirectional stream; `cancel()` ends it with a CANCELLED error, as grpc-js does. */
  stream(path: string): GrpcStream {
    const s = new GrpcStream();
    const call = this.open(path, undefined, {
      message: (m) => { if (!s.cancelled) s.emit('message', m); },
      end: (e) => {
        if (s.cancelled) s.emit('error', new GrpcError(GrpcStatus.CANCELLED, 'Cancelled on client'));
        else if (e) s.emit('error', e);
        else s.emit('end');
      },
    });
    s.attach(call);
    return s;
  }

  /** Resolves once connected (retrying meanwhile); rejects after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void> {
    if (this.connected) return Promise.resolve();
    if (this.closed) return Promise.reject(closedError());
    return new Promise((resolve, reject) => {
      let delay = RECONNECT_FIRST_MS;
      let retry: NodeJS.Timeout | undefined;
      const done = () => {
        this.readyWaiters.delete(onReady);
        clearTimeout(deadline);
        clearTimeout(retry);
      };
      const onReady = () => {
        done();
        if (this.closed) reject(closedError());
        else resolve();
      };
      const deadline = setTimeout(() => {
        done();
        reject(new GrpcError(GrpcStatus.UNAVAILABLE, `not connected to ${this.url} within ${timeoutMs} ms${this.lastError ? `: ${this.lastError}` : ''}`));
      }, timeoutMs);
      const attempt = () => {
        if (this.closed) return;
        const s = this.current();
        s.once('close', () => {
          if (!this.readyWaiters.has(onReady)) return;
          retry = setTimeout(attempt, delay);
          delay = Math.min(delay * 2, RECONNECT_MAX_MS);
        });
      };
      this.readyWaiters.add(onReady);
      attempt();
    });
  }

  close(): void {
    this.closed = true;
    this.session?.destroy();
    this.session = undefined;
    for (const w of [...this.readyWaiters]) w();
  }

  /** The current connection, made if there is none. */
  private current(): ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const tls: SecureClientSessionOptions = this.tls ? { ca: this.tls.rootCertificate, cert: this.tls.certChain, key: this.tls.privateKey } : {};
    const s = connect(this.url, {
      ...tls,
      settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
      // Large responses are not refused for the session's memory (as grpc-js sets it).
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
    });
    this.session = s;
    this.connected = false;
    s.unref();
    let ping: NodeJS.Timeout | undefined;
    // A member that accepts TCP and never finishes TLS (or drops SYNs) is given up on, so the next call dials again.
    const dial = setTimeout(() => s.destroy(new Error(`no connection to ${this.url} within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS).unref();
    s.on('connect', () => {
      clearTimeout(dial);
      if (this.session !== s) return;
      this.connected = true;
      this.lastError = undefined;
      s.setLocalWindowSize(SESSION_WINDOW);
      // Only while calls are open: etcd answers pings on an idle connection with GOAWAY too_many_pings.
      ping = setInterval(() => { if ((this.active.get(s) ?? 0) > 0) keepalive(s); }, KEEPALIVE_MS).unref();
      for (const w of [...this.readyWaiters]) w();
    });
    // A session's error also ends its streams (each reports its own); without a listener it would throw.
    s.on('error', (e: Error) => { this.lastError = e.message; });
    s.on('goaway', () => this.forget(s));
    s.on('close', () => {
      clearTimeout(dial);
      clearInterval(ping);
      this.forget(s);
    });
    return s;
  }

  /** No new calls on `s`; its open ones finish. */
  private retire(s: ClientHttp2Session): void {
    this.forget(s);
    if (!s.closed) s.close();
  }

  private forget(s: ClientHttp2Session): void {
    if (this.session !== s) return;
    this.session = undefined;
    this.connected = false;
  }

  private hold(s: ClientHttp2Session, delta: number): void {
    const n = (this.active.get(s) ?? 0) + delta;
    this.active.set(s, n);
    if (n === 0) s.unref();
    else if (n === 1 && delta > 0) s.ref();
  }

  /** Starts a call: its messages and its end (with the error, if any) go to `on`. */
  private open(path: string, timeoutMs: number | undefined, on: { message(m: Buffer): void; end(e?: GrpcError): void }): ClientHttp2Stream | undefined {
    // A call that cannot start ends on the next turn, when its caller listens.
    const fail = (e: GrpcError) => { setImmediate(() => on.end(e)); return undefined; };
    if (this.closed) return fail(closedError());
    // hasleader (clientv3.WithRequireLeader): a member cut off from its cluster answers "no leader" at once, not after 7 s.
    const headers: Record<string, string> = { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', hasleader: 'true' };
    if (timeoutMs !== undefined) headers['grpc-timeout'] = `${Math.max(1, Math.ceil(timeoutMs))}m`;
    let session: ClientHttp2Session;
    let st: ClientHttp2Stream;
    try {
      session = this.current();
      st = session.request(headers);
    } catch (e) {
      // The session was closing: nothing was sent, so one fresh connection may take it.
      this.session?.destroy();
      this.session = undefined;
      try {
        session = this.current();
        st = session.request(headers);
      } catch (again) {
        return fail(new GrpcError(GrpcStatus.UNAVAILABLE, (again as Error).message));
      }
    }
    this.hold(session, +1);
    let status: number | undefined;
    let details = '';
    let failure: GrpcError | undefined;
    let ended = false;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
      failure = new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, 'context deadline exceeded');
      stop(st);
    }, timeoutMs);
    const statusFrom = (h: IncomingHttpHeaders) => {
      if (h['grpc-status'] === undefined) return;
      status = Number(h['grpc-status']);
      details = percentDecoded(String(h['grpc-message'] ?? ''));
    };
    const reader = new FrameReader((m) => on.message(m), (e) => {
      failure ??= new GrpcError(GrpcStatus.INTERNAL, e);
      stop(st);
    });
    st.on('response', (h) => {
      const http = Number(h[':status']);
      if (http !== 200) failure ??= new GrpcError(httpToGrpc(http), `HTTP status ${http} from ${this.url}`);
      statusFrom(h); // Trailers-Only
    });
    st.on('data', (d: Buffer) => reader.push(d));
    st.on('trailers', statusFrom);
    st.on('error', (e: Error & { code?: string }) => {
      failure ??= new GrpcError(GrpcStatus.UNAVAILABLE, e.message);
      // 2^30 streams on one connection: the next call makes a new one.
      if (e.code === 'ERR_HTTP2_OUT_OF_STREAMS') this.retire(session);
    });
    st.on('close', () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      this.hold(session, -1);
      if (failure) return on.end(failure);
      if (status === undefined) return on.end(new GrpcError(GrpcStatus.UNAVAILABLE, `stream closed (code ${st.rstCode}) without a gRPC status${this.lastError ? `: ${this.lastError}` : ''}`));
      on.end(status === GrpcStatus.OK ? undefined : new GrpcError(status, details));
    });
    return st;
  }
}

/** A bidirectional call's client side: 'message' (Buffer), then 'end' or 'error' (GrpcError); a listener for 'error' is required. */
export class GrpcStream extends EventEmitter {
  cancelled = false;
  private call: ClientHttp2Stream | undefined;

  attach(call: ClientHttp2Stream | undefined): void { this.call = call; }

  write(message: Buffer): void {
    if (this.call && !this.call.closed && !this.cancelled) this.call.write(frame(message));
  }

  cancel(): void {
    this.cancelled = true;
    if (this.call) stop(this.call);
  }
}

/**
 * Ends a call now. A stream still waiting for its connection (TLS handshake, SYN) is destroyed: Node
 * would close it only once the connection is made, so a deadline would wait for a member that hangs.
 */
function stop(st: ClientHttp2Stream): void {
  if (st.pending) st.destroy();
  else st.close(constants.NGHTTP2_CANCEL);
}

function keepalive(s: ClientHttp2Session): void {
  // A session closed by GOAWAY still carries its draining streams: they need the pings too.
  if (s.destroyed) return;
  const timer = setTimeout(() => s.destroy(new Error('keepalive ping not answered')), KEEPALIVE_TIMEOUT_MS).unref();
  try {
    s.ping(() => clearTimeout(timer));
  } catch {
    clearTimeout(timer);
  }
}

const closedError = () => new GrpcError(GrpcStatus.CANCELLED, 'the etcd client is closed');

/** A message with gRPC's 5-byte prefix: not compressed, its length. */
function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/** Splits a stream's DATA into gRPC messages, however the chunks fall. */
class FrameReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly onMessage: (m: Buffer) => void, private readonly onError: (why: string) => void) {}

  push(chunk: Buffer): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    while (this.pendingBytes >= 5) {
      const head = this.peek(5);
      const len = head.readUInt32BE(1);
      if (head[0] !== 0) return this.onError('a compressed message (none was asked for)');
      if (this.pendingBytes < 5 + len) return;
      const all = this.take(5 + len);
      this.onMessage(all.subarray(5));
    }
  }

  private peek(n: number): Buffer {
    if (this.pending[0].length >= n) return this.pending[0];
    const joined = Buffer.concat(this.pending);
    this.pending = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const joined = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    const out = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.pending = rest.length ? [rest] : [];
    this.pendingBytes -= n;
    return out;
  }
}

function percentDecoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** grpc's HTTP-to-gRPC status mapping for a response that is not gRPC's. */
function httpToGrpc(http: number): number {
  switch (http) {
    case 400: return GrpcStatus.INTERNAL;
    case 401: return GrpcStatus.UNAUTHENTICATED;
    case 403: return GrpcStatus.PERMISSION_DENIED;
    case 404: return GrpcStatus.UNIMPLEMENTED;
    case 429: case 502: case 503: case 504: return GrpcStatus.UNAVAILABLE;
    default: return GrpcStatus.UNKNOWN;
  }
}
