// The listening server: HTTP/2 and HTTP/1.1 on one TLS port (ALPN decides), with the connection limits
// and HTTP/2 settings of k8s.io/apiserver's secure serving (server/secure_serving.go, RecommendedOptions).
// kube-apiserver's aggregator speaks HTTP/2 to us and multiplexes requests and watches over one
// connection; kubectl and most clients use HTTP/1.1 or HTTP/2 as they like.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { installHttp1Framing } from './http1Framing.js';
import { scheduleStreams } from './http2Scheduling.js';

/** Connection limits, as kube-apiserver's secure serving sets them. */
export interface HttpLimits {
  /** Time to receive a request's headers (and, for a new connection, its first request). */
  readHeaderTimeoutMs: number;
  /** A connection with no request in flight is closed after this (HTTP/1.1 keep-alive and HTTP/2 alike). */
  idleTimeoutMs: number;
  /** A request body not received completely by then gets 504 and the connection closes. */
  bodyTimeoutMs: number;
  /** A TLS handshake not finished by then is dropped. */
  handshakeTimeoutMs: number;
  /** Request line + headers, as Go's MaxHeaderBytes (+ its 4096 bytes of slop; HTTP/2: the header list, at most HTTP2_MAX_HEADER_LIST). */
  maxHeaderBytes: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  readHeaderTimeoutMs: 32_000, idleTimeoutMs: 90_000, bodyTimeoutMs: 60_000, handshakeTimeoutMs: 32_000, maxHeaderBytes: 1 << 20,
};

/** RecommendedOptions: aggregated servers let the aggregator multiplex 1000 streams per connection. */
export const HTTP2_MAX_STREAMS = 1000;
/**
 * nghttp2 refuses any header field over 64 KiB by ending the whole connection (COMPRESSION_ERROR), which
 * under the aggregator would cut every user's requests and watches. Advertising this as the header list
 * limit makes a conforming client (Go's transport) refuse such a request itself, alone. HTTP/1.1 keeps
 * kube's 1 MiB.
 */
export const HTTP2_MAX_HEADER_LIST = 64 * 1024;
/** 99% of objects fit: the per-stream upload window and largest frame (resourceBody99Percentile). */
const RESOURCE_BODY_99_PERCENTILE = 256 * 1024;

export interface ServingServer {
  server: Http2SecureServer;
  /** Sends GOAWAY to every HTTP/2 connection: in-flight streams finish, no new ones start. */
  closeSessions(): void;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export function createServingServer(tls: { key: string; cert: string }, limits: HttpLimits, handler: Handler): ServingServer {
  const server = createSecureServer({
    key: tls.key, cert: tls.cert, requestCert: true, rejectUnauthorized: false,
    handshakeTimeout: limits.handshakeTimeoutMs,
    allowHTTP1: true,
    settings: {
      maxConcurrentStreams: HTTP2_MAX_STREAMS,
      initialWindowSize: RESOURCE_BODY_99_PERCENTILE,
      maxFrameSize: RESOURCE_BODY_99_PERCENTILE,
      maxHeaderListSize: Math.min(limits.maxHeaderBytes, HTTP2_MAX_HEADER_LIST),
      enablePush: false,
    },
    // Node's default (10 MB) refuses new streams once responses queued for a connection exceed it:
    // a few large LISTs in flight on the aggregator's one connection would do that.
    maxSessionMemory: 64,
    // Above what the header list allows: each field costs 32 bytes + its name and value there, so at
    // most ~1,985 fit in 64 KiB; the list size decides, as in Go (which has no count of its own).
    maxHeaderListPairs: 2000,
  }, handler as (req: unknown, res: unknown) => void);
  // HTTP/1.1 connections are served by node:http's machinery, which reads these from the server.
  Object.assign(server, {
    headersTimeout: limits.readHeaderTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    // No whole-request timeout: a watch may be quiet for its whole life.
    requestTimeout: 0,
    // How often Node looks for connections past their header deadline.
    connectionsCheckingInterval: Math.min(1000, limits.readHeaderTimeoutMs),
  });
  installHttp1Framing(server, limits.maxHeaderBytes);
  // Handlers of HTTP/2 streams start in turns, per connection (CVE-2023-44487; http2Scheduling.ts).
  scheduleStreams(server, HTTP2_MAX_STREAMS);
  // A connection's client certificate is authenticated once (auth/x509.ts): it must not change.
  server.on('secureConnection', (socket: TLSSocket) => { socket.disableRenegotiation?.(); });
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.on('error', () => session.destroy());
    idleClose(session, limits.idleTimeoutMs);
    session.once('remoteSettings', () => {
      // The connection-level upload window for as many streams (MaxUploadBufferPerConnection).
      try { session.setLocalWindowSize(RESOURCE_BODY_99_PERCENTILE * HTTP2_MAX_STREAMS); } catch { /* closing */ }
    });
  });
  // A malformed frame from one client ends its session; nothing to log above debug.
  server.on('sessionError', () => {});
  return { server, closeSessions: () => { for (const s of sessions) s.close(); } };
}

/** Go's http2.Server IdleTimeout: a connection with no open stream for `ms` is closed (GOAWAY). */
function idleClose(session: ServerHttp2Session, ms: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => { timer = setTimeout(() => session.close(), ms); timer.unref(); };
  arm();
  session.on('stream', (stream) => {
    open++;
    if (timer) { clearTimeout(timer); timer = undefined; }
    stream.once('close', () => { if (--open === 0 && !session.closed && !session.destroyed) arm(); });
  });
  session.once('close', () => { if (timer) clearTimeout(timer); });
}
