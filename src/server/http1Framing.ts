// HTTP/1.x requests read as Go's net/http server reads them (server.go conn.readRequest, request.go
// readRequest, transfer.go), on the HTTP/1.1 fallback of the HTTP/2 server. node:http2's allowHTTP1 hands
// such sockets to node:http's connection handling, but Node 20 applies none of http.Server's options
// there (a Host-less HTTP/1.1 request was served; fields past the 1,000th were dropped) and Node 24
// applies its defaults (an empty 400; a 431 past 1,000 fields). llhttp's header limit counts only the
// URL, names and values: 90,000 small fields (1.26 MB on the wire) passed a 1 MiB limit. So each
// connection's parser is watched here, before node:http makes a request of what it parsed. What Go
// counts and we cannot: blanks padding a value, which llhttp discards unstored (the read-header
// timeout bounds them); a head is counted as clients write it, `name: value` with one space.
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Http2SecureServer } from 'node:http2';
import { HTTP1_REFUSED } from '../endpoints/http.js';

/** Go reads at most MaxHeaderBytes + 4096 bytes ("bufio slop", server.go initialReadLimitSize) for a request's head. */
const HEADER_READ_SLOP = 4096;

/** The parser callback slots node:http uses (node_http_parser.cc: kOnMessageBegin, kOnHeaders, ...). */
const { HTTPParser } = createRequire(import.meta.url)('node:_http_common') as {
  HTTPParser: { kOnMessageBegin: number; kOnHeaders: number };
};

interface NodeHttpParser {
  socket: Socket | null;
  /** node:http's per-connection hand-over of a parsed head (parserOnIncoming): returning 0 parses its body. */
  onIncoming: ((req: IncomingMessage, keepAlive: boolean) => number) | null;
  incoming: IncomingMessage | null;
  _headers: string[];
  [slot: number]: unknown;
  [HEAD]?: HeadState;
}

const HEAD = Symbol('http1Framing.head');
const HOOKED = Symbol('http1Framing.hooked');

/** One connection's head being read. */
interface HeadState {
  socket: Socket;
  maxHeadBytes: number;
  inHead: boolean;
  /** Bytes of the head's fields (and URL) seen so far. */
  seen: number;
  refused: boolean;
  refuse(err: Http1Refusal): void;
}

/** Why a request is refused before it exists; the code and message Go's server gives. */
interface Http1Refusal extends Error { code: typeof HTTP1_REFUSED; statusCode: 400 | 431 | 505 }

function refusal(statusCode: Http1Refusal['statusCode'], message: string): Http1Refusal {
  return Object.assign(new Error(message), { code: HTTP1_REFUSED, statusCode });
}

/** Bytes of `name: value\r\n` lines, as clients write them (the whitespace around a value is not seen). */
function fieldBytes(flat: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < flat.length; i += 2) n += flat[i].length + flat[i + 1].length + 4;
  return n;
}

/** The values of the fields named `lower` (lowercase), in order. */
function fieldValues(flat: readonly string[], lower: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < flat.length; i += 2) if (flat[i].length === lower.length && flat[i].toLowerCase() === lower) out.push(flat[i + 1]);
  return out;
}

/** httpguts.ValidHostHeader: bytes of a host, an IPv6 literal and a port. */
const VALID_HOST = /^[0-9A-Za-z!$%&'()*+,\-.:;=[\]_~]*$/;

/** What Go's readRequest refuses in a complete head, in its order; undefined: serve it. */
function refuseHead(req: IncomingMessage, maxHeadBytes: number): Http1Refusal | undefined {
  const raw = req.rawHeaders;
  // Request line + header lines + the empty line; strings hold bytes here (latin1).
  const head = req.method!.length + req.url!.length + `  HTTP/${req.httpVersion}\r\n`.length + fieldBytes(raw) + 2;
  if (head > maxHeadBytes) return refusal(431, 'request header fields too large');
  const hosts = fieldValues(raw, 'host');
  if (hosts.length > 1) return refusal(400, 'too many Host headers');
  // Go: exactly one Transfer-Encoding, "chunked" (transfer.go parseTransferEncoding; it answers 501, a
  // client's mistake here is a 400). llhttp would frame "gzip, chunked" as chunked, and HTTP/1.0's
  // chunked body too where Go ignores the field: framing that differs is refused (RFC 9112 §6.1).
  const te = fieldValues(raw, 'transfer-encoding');
  if (te.length > 0 && (te.length > 1 || !/^chunked$/i.test(te[0]) || req.httpVersionMinor === 0)) return refusal(400, 'unsupported transfer encoding');
  if (req.httpVersionMajor !== 1) return refusal(505, 'unsupported protocol version');
  if (req.httpVersionMinor >= 1 && hosts.length === 0 && req.method !== 'CONNECT') return refusal(400, 'missing required Host header');
  if (hosts.length === 1 && !VALID_HOST.test(hosts[0])) return refusal(400, 'malformed Host header');
  return undefined;
}

/**
 * Applies Go's HTTP/1.x request rules to the server's HTTP/1 connections. `maxHeaderBytes` is
 * MaxHeaderBytes: a head of more than it + 4096 bytes gets 431, however many fields it has. Every field
 * is kept, as Go keeps them (node:http would drop or refuse those past 1,000); the byte limit bounds them.
 */
export function installHttp1Framing(server: Http2SecureServer, maxHeaderBytes: number): void {
  const maxHeadBytes = maxHeaderBytes + HEADER_READ_SLOP;
  // node:http reads these off the server. llhttp's own count (URL + names + values) is at most the
  // head's size, so its limit one byte past ours never refuses a head that Go serves: it is the backstop
  // that stops a head before JavaScript sees it. requireHostHeader: in case a socket escaped watchHead.
  Object.assign(server, { maxHeaderSize: maxHeadBytes + 1, maxHeadersCount: 0, requireHostHeader: true });
  // After node:http2's own listener, which gave an HTTP/1 socket its parser.
  server.on('secureConnection', (socket: Socket & { parser?: NodeHttpParser | null }) => {
    if (socket.parser) watchHead(server, socket, socket.parser, maxHeadBytes);
  });
}

function watchHead(server: Http2SecureServer, socket: Socket, parser: NodeHttpParser, maxHeadBytes: number): void {
  const st: HeadState = {
    socket, maxHeadBytes, inHead: true, seen: 0, refused: false,
    refuse(err) {
      // As Go: nothing more is read into requests; the answer follows any response still being written.
      st.refused = true;
      parser.incoming = null;
      parser._headers = [];
      server.emit('clientError', err, socket);
    },
  };
  parser[HEAD] = st;
  socket.once('close', () => { if (parser[HEAD] === st) delete parser[HEAD]; });
  hookFieldBatches(parser);
  // Per connection: node:http clears this one when the parser goes back to its pool.
  parser[HTTPParser.kOnMessageBegin] = () => { st.inHead = true; st.seen = 0; };
  const onIncoming = parser.onIncoming!;
  parser.onIncoming = (req, keepAlive) => {
    st.inHead = false;
    const err = st.refused ? undefined : refuseHead(req, maxHeadBytes);
    if (!st.refused && !err) return onIncoming(req, keepAlive);
    if (err) st.refuse(err);
    parser.incoming = null; // its body, if any, is parsed and dropped
    return 0;
  };
}

/**
 * Fields arrive in batches of 32 while a head is long: a head already too large stops there. Parsers are
 * pooled and shared with node:http's client, and this slot survives the pool: the hook is installed once
 * and acts only for the connection that set the parser's HeadState.
 */
function hookFieldBatches(parser: NodeHttpParser): void {
  if ((parser as { [HOOKED]?: true })[HOOKED]) return;
  Object.assign(parser, { [HOOKED]: true });
  const onHeaders = parser[HTTPParser.kOnHeaders] as (this: NodeHttpParser, headers: string[], url: string) => void;
  parser[HTTPParser.kOnHeaders] = function (this: NodeHttpParser, headers: string[], url: string) {
    const st = this[HEAD];
    if (st && st.socket === this.socket) {
      if (st.refused) return;
      if (st.inHead) {
        st.seen += url.length + fieldBytes(headers);
        if (st.seen > st.maxHeadBytes) return st.refuse(refusal(431, 'request header fields too large'));
      }
    }
    onHeaders.call(this, headers, url); // (or a chunked body's trailers)
  };
}
