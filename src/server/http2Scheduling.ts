// When an HTTP/2 stream's handler starts: the Node form of Go's fix for CVE-2023-44487 (rapid reset),
// net/http h2_bundle.go scheduleHandler / handlerDone. Go starts a stream's handler only while fewer than
// maxConcurrentStreams of that connection's handlers run, queues the rest, skips queued streams that were
// reset before their turn, and ends a connection whose queue passes 4 × maxConcurrentStreams with
// GOAWAY(ENHANCE_YOUR_CALM) ("too_many_early_resets").
//
// On one Node thread a handler "running" costs nothing while it waits (a SubjectAccessReview, a
// resourceVersion wait, a slow reader); what stalls everyone is the synchronous work of many handlers
// started in one turn of the event loop (a read of 1,000 HEADERS starts 1,000 LISTs, whose renderings
// then run back to back). So the limit here is on starts, not on running handlers: each turn of the loop
// starts at most STARTS_PER_TURN queued streams per connection, the connections taken in turn, and the
// next starts wait for the next turn, after the loop has read the sockets again (so resets already sent
// are seen, and other connections' requests get in). A count of running handlers would let 8 requests
// waiting for a resourceVersion stop every user behind the aggregator's one connection, and 1,000 watches
// (long-running, multiplexed by the aggregator) would hold every slot for good; starts cost them once.
// Probes (/livez, /readyz, /healthz) are never queued: kube's "probes" FlowSchema is exempt too.
import { constants, Http2ServerRequest, type Http2SecureServer, type Http2ServerResponse, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { PROBE_PATHS } from './filters/maxInFlight.js';

/**
 * Queued streams started per connection in one turn of the event loop. A LIST of 1,000 llamas costs ~3 ms
 * of CPU, so one connection's starts cost about 10 ms a turn: a probe waits a turn or two, not 1,000 LISTs.
 */
export const STARTS_PER_TURN = 4;

/** Go's goAwayTimeout: after GOAWAY for an error, in-flight streams get this long before the connection closes. */
const GOAWAY_CLOSE_MS = 1000;

/**
 * nghttp2's own answer to rapid reset (1.57, session_update_stream_reset_ratelim): past 1,000 RST_STREAMs
 * (refilled at 33 a second) it queues GOAWAY(INTERNAL_ERROR) but still creates the streams already read,
 * and with Node no longer applies their RST_STREAMs: they would run, though the GOAWAY told the client they
 * were not processed. So a connection whose streams are reset before they start gets our GOAWAY first:
 * a fifth of nghttp2's burst, at its rate, which also bounds what an attacker's connection costs before it
 * (~200 streams made and dropped: 5 such connections at once held the loop 35-85 ms, 115-300 ms at 500).
 * An honest client rarely cancels a request before its turn came (a turn or a few, milliseconds).
 */
const EARLY_RESET_BURST = 200;
const EARLY_RESET_PER_SECOND = 33;

/** What the scheduler did, for tests and metrics. */
export interface StreamSchedulingStats {
  started: number;
  /** Streams reset (by the client or by the server's own stream error) before their handler started. */
  droppedBeforeStart: number;
  /** Connections ended with GOAWAY(ENHANCE_YOUR_CALM). */
  calmed: number;
}

interface Queued { req: Http2ServerRequest; res: Http2ServerResponse; started: boolean }

/** A token bucket of early resets (nghttp2_ratelim's shape). */
class EarlyResets {
  private tokens = EARLY_RESET_BURST;
  private at = performance.now();

  /** Counts one; false once the bucket is empty. */
  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(EARLY_RESET_BURST, this.tokens + ((now - this.at) / 1000) * EARLY_RESET_PER_SECOND);
    this.at = now;
    return --this.tokens >= 0;
  }
}

interface Connection { queue: Queued[]; early: EarlyResets; calmed: boolean }

const isProbe = (req: Http2ServerRequest): boolean => {
  const path = req.url;
  const q = path.indexOf('?');
  return req.method === 'GET' && PROBE_PATHS.has(q < 0 ? path : path.slice(0, q));
};

const gone = (s: ServerHttp2Stream): boolean => s.closed || s.destroyed;

type Emit = (event: string | symbol, ...args: unknown[]) => boolean;

/**
 * Holds back the server's 'request' event of HTTP/2 streams (HTTP/1.1 passes straight through) until the
 * stream's turn. Node's compatibility layer still makes the request and response at once, so a body that
 * arrives while the stream waits is kept for the handler.
 */
export function scheduleStreams(server: Http2SecureServer, maxConcurrentStreams: number): StreamSchedulingStats {
  const emit: Emit = server.emit.bind(server);
  const start = (q: Queued) => { q.started = true; stats.started++; emit('request', q.req, q.res); };
  const stats: StreamSchedulingStats = { started: 0, droppedBeforeStart: 0, calmed: 0 };
  const connections = new WeakMap<Http2Session, Connection>();
  /** Connections with queued streams, in the order their turn comes. */
  const waiting = new Set<Http2Session>();
  let turn: NodeJS.Immediate | undefined;

  const calm = (session: Http2Session, conn: Connection) => {
    conn.calmed = true;
    if (session.destroyed) return;
    waiting.delete(session);
    stats.calmed++;
    // Never started: safe for the client to retry elsewhere (RFC 9113 §8.7).
    for (const q of conn.queue.splice(0)) if (!gone(q.req.stream)) q.req.stream.close(constants.NGHTTP2_REFUSED_STREAM);
    // The last stream the session processed, as Go sends maxClientStreamID.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, session.state.lastProcStreamID ?? 0);
    setTimeout(() => session.destroy(), GOAWAY_CLOSE_MS).unref();
  };

  /** A stream reset before its start: dropped, and counted against its connection. */
  const dropped = (session: Http2Session, conn: Connection) => {
    stats.droppedBeforeStart++;
    // A connection ending closes its streams too: that is no client's reset.
    if (session.closed || session.destroyed || conn.calmed) return;
    if (!conn.early.take()) calm(session, conn);
  };

  /** One turn: each connection in turn sheds the reset streams at its head and starts up to STARTS_PER_TURN. */
  const runTurn = () => {
    turn = undefined;
    for (const session of [...waiting]) {
      waiting.delete(session);
      const conn = connections.get(session);
      if (!conn) continue;
      const queue = conn.queue;
      let i = 0;
      for (let startedHere = 0; i < queue.length && !conn.calmed; i++) {
        if (gone(queue[i].req.stream)) continue; // counted by its 'close'
        if (startedHere++ === STARTS_PER_TURN) break;
        start(queue[i]);
      }
      queue.splice(0, i);
      // Round robin: a connection that still waits goes to the back of the next turn's order.
      if (queue.length > 0) waiting.add(session);
    }
    if (waiting.size > 0) turn ??= setImmediate(runTurn);
  };

  const schedule = (req: Http2ServerRequest, res: Http2ServerResponse) => {
    const q: Queued = { req, res, started: false };
    if (isProbe(req)) { start(q); return; }
    const stream = req.stream;
    const session = stream.session;
    if (!session) return;
    let conn = connections.get(session);
    if (!conn) connections.set(session, conn = { queue: [], early: new EarlyResets(), calmed: false });
    if (conn.calmed) { if (!gone(stream)) stream.close(constants.NGHTTP2_REFUSED_STREAM); return; }
    // Counted as it happens: nghttp2 may read thousands of resets before this loop's next turn.
    const c = conn;
    stream.once('close', () => { if (!q.started) dropped(session, c); });
    // h2_bundle.go scheduleHandler: len(sc.unstartedHandlers) > 4*sc.advMaxStreams ("too_many_early_resets").
    if (conn.queue.length > 4 * maxConcurrentStreams) { conn.queue.push(q); calm(session, conn); return; }
    conn.queue.push(q);
    waiting.add(session);
    turn ??= setImmediate(runTurn);
  };

  server.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'request' && args[0] instanceof Http2ServerRequest) { schedule(args[0], args[1] as Http2ServerResponse); return true; }
    return emit(event, ...args);
  }) as typeof server.emit;
  return stats;
}
