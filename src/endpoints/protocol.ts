// What differs between an HTTP/1.1 request and its HTTP/2 twin (node:http2's compat API), in one place.
import type { IncomingMessage } from 'node:http';
import { constants, type ServerHttp2Stream } from 'node:http2';
import type { FastifyReply } from 'fastify';

export const isHttp2 = (raw: IncomingMessage): boolean => raw.httpVersionMajor === 2;

/** HTTP/1.1: a body of unknown length is chunked. HTTP/1.0 has no chunks (the body ends with the connection); HTTP/2 frames it. */
export const isHttp11 = (raw: IncomingMessage): boolean => raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1;

const distinct = new WeakMap<IncomingMessage, NodeJS.Dict<string[]>>();

/** Every header's values, one per field as sent (HTTP/2 requests have no headersDistinct; their headers joins repeats). */
export function headersDistinct(raw: IncomingMessage): NodeJS.Dict<string[]> {
  if (raw.headersDistinct) return raw.headersDistinct;
  let d = distinct.get(raw);
  if (!d) {
    d = {};
    const r = raw.rawHeaders;
    for (let i = 0; i + 1 < r.length; i += 2) {
      const name = r[i].toLowerCase();
      if (!name.startsWith(':')) (d[name] ??= []).push(r[i + 1]);
    }
    distinct.set(raw, d);
  }
  return d;
}

/** The request's authority: Host (HTTP/1.1) or :authority (HTTP/2), as Go's Request.Host. */
export const hostOf = (raw: IncomingMessage): string | undefined => raw.headers.host ?? (raw.headers[':authority'] as string | undefined);

/** Close the connection once this answer is written (HTTP/1.1). HTTP/2 has no such header: GOAWAY does it. */
export function closeConnectionAfter(reply: FastifyReply): void {
  if (!isHttp2(reply.request.raw)) reply.header('connection', 'close');
}

/**
 * An answer given before the request body was read. HTTP/1.1: close the connection once written, rather
 * than read the rest at the client's pace. HTTP/2 multiplexes others on the connection, and resetting
 * the stream could drop the answer's queued frames: read the rest and drop it, and reset the stream
 * only if the body is still not complete after `timeoutMs`.
 */
export function discardUnreadBody(reply: FastifyReply, timeoutMs: number): void {
  const raw = reply.request.raw;
  if (!isHttp2(raw)) { closeConnectionAfter(reply); return; }
  const stream = (raw as IncomingMessage & { stream?: ServerHttp2Stream }).stream;
  if (!stream || stream.endAfterHeaders || stream.closed) return; // no body was ever coming
  raw.unpipe(); // from a body parser that stopped reading (its backpressure would pause us again)
  raw.resume();
  const timer = setTimeout(() => { if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL); }, timeoutMs);
  timer.unref();
  stream.once('close', () => clearTimeout(timer));
}

/** An HTTP/2 stream that can carry nothing more. */
const streamGone = (stream: { closed: boolean; destroyed: boolean } | undefined): boolean => !stream || stream.closed || stream.destroyed;

/**
 * A response (or socket) that can take no more writes: its 'close' may already have been emitted, so waiting
 * for 'drain' or 'close' would never end. node's HTTP/2 compatibility response has no `destroyed`: its stream has.
 */
export function responseGone(res: object): boolean {
  const r = res as { destroyed?: boolean; stream?: { closed: boolean; destroyed: boolean } };
  return r.destroyed === true || (r.stream !== undefined && streamGone(r.stream));
}

/** The client went away: its connection (HTTP/1.1), or under HTTP/2 its stream (reset or closed). */
export function clientGone(raw: IncomingMessage): boolean {
  if (!isHttp2(raw)) return raw.socket.destroyed;
  return streamGone((raw as IncomingMessage & { stream?: ServerHttp2Stream }).stream);
}

/** Cuts a response short: HTTP/1.x closes its connection, HTTP/2 resets its stream (CANCEL), as Go's server does. */
export function abortResponse(res: object): void {
  const r = res as { destroy?: () => void; stream?: ServerHttp2Stream };
  if (r.stream) {
    if (!streamGone(r.stream)) r.stream.close(constants.NGHTTP2_CANCEL);
  } else r.destroy?.();
}
