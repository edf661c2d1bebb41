// HTTP/2 by hand, for what node:http2 refuses to send (malformed headers, floods, frames after
// END_STREAM): a frame encoder, a literal-only HPACK encoder, a parser of incoming frames and just
// enough HPACK decoding to read a response's :status. TLS with ALPN h2, loopback only.
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export const T = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const F = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
export const S = { HEADER_TABLE_SIZE: 1, ENABLE_PUSH: 2, MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4, MAX_FRAME_SIZE: 5, MAX_HEADER_LIST_SIZE: 6 } as const;
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface Frame { type: number; flags: number; stream: number; payload: Buffer }

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

export function settingsFrame(pairs: [number, number][]): Buffer {
  const p = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([id, v], i) => { p.writeUInt16BE(id, 6 * i); p.writeUInt32BE(v, 6 * i + 2); });
  return frame(T.SETTINGS, 0, 0, p);
}

export const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n >>> 0); return b; };
export const rstFrame = (stream: number, code = 8 /* CANCEL */): Buffer => frame(T.RST_STREAM, 0, stream, u32(code));
export const windowUpdate = (stream: number, inc: number): Buffer => frame(T.WINDOW_UPDATE, 0, stream, u32(inc));
export const pingFrame = (n: number): Buffer => { const p = Buffer.alloc(8); p.writeUInt32BE(n >>> 0, 4); return frame(T.PING, 0, 0, p); };

/** HPACK integer with an N-bit prefix (RFC 7541 §5.1); `first` holds the representation's flag bits. */
export function hpackInt(value: number, prefixBits: number, first: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([first | value]);
  const out = [first | max];
  let v = value - max;
  while (v >= 128) { out.push((v & 0x7f) | 0x80); v = Math.floor(v / 128); }
  out.push(v);
  return Buffer.from(out);
}

const hpackString = (s: string): Buffer => { const b = Buffer.from(s, 'latin1'); return Buffer.concat([hpackInt(b.length, 7, 0), b]); };
/** Literal header field without indexing, new name, no Huffman: any bytes go through as given. */
export const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0]), hpackString(name), hpackString(value)]);
/** Literal with incremental indexing: the field enters the decoder's dynamic table (index 62 when newest). */
export const literalIndexed = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0x40]), hpackString(name), hpackString(value)]);
/** Indexed header field: one byte (below 127) that the decoder expands to a whole table entry. */
export const indexed = (index: number): Buffer => hpackInt(index, 7, 0x80);
export const block = (fields: [string, string][]): Buffer => Buffer.concat(fields.map(([n, v]) => literal(n, v)));

export function headersFrame(stream: number, fields: [string, string][] | Buffer, flags: number = F.END_HEADERS | F.END_STREAM): Buffer {
  return frame(T.HEADERS, flags, stream, Buffer.isBuffer(fields) ? fields : block(fields));
}

// Huffman codes of the digits (RFC 7541 Appendix B): all a :status value can hold.
const DIGIT_CODES: [number, number][] = [[0x0, 5], [0x1, 5], [0x2, 5], [0x19, 6], [0x1a, 6], [0x1b, 6], [0x1c, 6], [0x1d, 6], [0x1e, 6], [0x1f, 6]];
const STATIC_STATUS: Record<number, string> = { 8: '200', 9: '204', 10: '206', 11: '304', 12: '400', 13: '404', 14: '500' };

function huffmanDigits(b: Buffer): string {
  let bits = '';
  for (const byte of b) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  let i = 0;
  outer: while (i < bits.length) {
    for (const [d, [code, len]] of DIGIT_CODES.entries()) {
      if (i + len <= bits.length && parseInt(bits.slice(i, i + len), 2) === code) { out += String(d); i += len; continue outer; }
    }
    break; // EOS padding (all ones)
  }
  return out;
}

function readInt(b: Buffer, pos: number, prefixBits: number): [number, number] {
  const max = (1 << prefixBits) - 1;
  let v = b[pos] & max;
  pos++;
  if (v < max) return [v, pos];
  let m = 0;
  while (pos < b.length) { const c = b[pos++]; v += (c & 0x7f) * 2 ** m; m += 7; if (!(c & 0x80)) break; }
  return [v, pos];
}

/** The :status of a response header block (always its first field), or undefined if not decodable here. */
export function statusOf(headerBlock: Buffer): string | undefined {
  let pos = 0;
  while (pos < headerBlock.length && (headerBlock[pos] & 0xe0) === 0x20) pos = readInt(headerBlock, pos, 5)[1]; // table size updates
  const first = headerBlock[pos];
  if (first === undefined) return undefined;
  if (first & 0x80) return STATIC_STATUS[readInt(headerBlock, pos, 7)[0]];
  const prefix = (first & 0xc0) === 0x40 ? 6 : 4;
  const [nameIndex, p1] = readInt(headerBlock, pos, prefix);
  if (nameIndex < 8 || nameIndex > 14) return undefined;
  const huffman = (headerBlock[p1] & 0x80) !== 0;
  const [len, p2] = readInt(headerBlock, p1, 7);
  const value = headerBlock.subarray(p2, p2 + len);
  return huffman ? huffmanDigits(value) : value.toString('latin1');
}

export interface RawH2 {
  socket: TLSSocket;
  frames: Frame[];
  /** Bytes of DATA received so far, per stream. */
  dataBytes: Map<number, number>;
  /** Streams whose response ended (a DATA or HEADERS frame with END_STREAM). */
  ended: Set<number>;
  write(b: Buffer): boolean;
  /** The first received frame (past or future) that matches, or an error after `timeoutMs`. */
  waitFor(pred: (f: Frame) => boolean, timeoutMs: number, what: string): Promise<Frame>;
  /** Resolves when the socket closes. */
  closed: Promise<void>;
  isClosed(): boolean;
  goaway(): { lastStream: number; code: number } | undefined;
  /** Status of a stream's response, or its RST_STREAM code, or undefined if neither came. */
  outcome(stream: number): { status?: string; rst?: number };
  destroy(): void;
}

export interface RawOptions {
  /** ALPN offered; 'h2' by default. */
  alpn?: string[];
  /** Our SETTINGS; every one is acknowledged as the server's arrive. */
  settings?: [number, number][];
  /** Send the preface and SETTINGS (default true). */
  preface?: boolean;
}

/** A TLS connection speaking frames by hand; it ACKs the server's SETTINGS and PINGs, nothing else. */
export async function openRaw(url: string, ca: string, opts: RawOptions = {}): Promise<RawH2> {
  const { port } = new URL(url);
  const socket = tlsConnect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost', ALPNProtocols: opts.alpn ?? ['h2'] });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => { socket.once('secureConnect', resolve); socket.once('error', reject); });
  const frames: Frame[] = [];
  const dataBytes = new Map<number, number>();
  const ended = new Set<number>();
  const waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  let buf: Buffer = Buffer.alloc(0);
  let closed = false;
  const closedP = new Promise<void>((r) => socket.once('close', () => { closed = true; r(); }));
  socket.on('data', (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      const f: Frame = { type: buf[3], flags: buf[4], stream: buf.readUInt32BE(5) & 0x7fffffff, payload: Buffer.from(buf.subarray(9, 9 + len)) };
      buf = buf.subarray(9 + len);
      if ((f.type === T.DATA || f.type === T.HEADERS) && f.flags & F.END_STREAM) ended.add(f.stream);
      if (f.type === T.DATA) { dataBytes.set(f.stream, (dataBytes.get(f.stream) ?? 0) + len); f.payload = Buffer.alloc(0); }
      if (f.type === T.SETTINGS && !(f.flags & F.ACK) && !socket.destroyed) socket.write(frame(T.SETTINGS, F.ACK, 0));
      if (f.type === T.PING && !(f.flags & F.ACK) && !socket.destroyed) socket.write(frame(T.PING, F.ACK, 0, f.payload));
      if (f.type !== T.DATA && f.type !== T.PING && f.type !== T.WINDOW_UPDATE) frames.push(f);
      for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i].pred(f)) { waiters[i].resolve(f); waiters.splice(i, 1); }
    }
  });
  if (opts.preface !== false) socket.write(Buffer.concat([PREFACE, settingsFrame(opts.settings ?? [])]));
  const write = (b: Buffer) => !socket.destroyed && socket.write(b);
  return {
    socket, frames, dataBytes, ended, write,
    closed: closedP,
    isClosed: () => closed,
    waitFor(pred, timeoutMs, what) {
      const seen = frames.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms; frames seen: ${describeFrames(frames)}`)), timeoutMs);
        waiters.push({ pred, resolve: (f) => { clearTimeout(t); resolve(f); } });
        void closedP.then(() => { const f = frames.find(pred); if (!f) { clearTimeout(t); reject(new Error(`connection closed before ${what}; frames: ${describeFrames(frames)}`)); } });
      });
    },
    goaway() {
      const g = frames.find((f) => f.type === T.GOAWAY);
      return g && { lastStream: g.payload.readUInt32BE(0) & 0x7fffffff, code: g.payload.readUInt32BE(4) };
    },
    outcome(stream) {
      const h = frames.find((f) => f.stream === stream && f.type === T.HEADERS);
      const r = frames.find((f) => f.stream === stream && f.type === T.RST_STREAM);
      return { status: h && statusOf(h.payload), rst: r?.payload.readUInt32BE(0) };
    },
    destroy: () => socket.destroy(),
  };
}

const NAMES = ['DATA', 'HEADERS', 'PRIORITY', 'RST_STREAM', 'SETTINGS', 'PUSH_PROMISE', 'PING', 'GOAWAY', 'WINDOW_UPDATE', 'CONTINUATION'];
export function describeFrames(frames: Frame[]): string {
  return frames.slice(-12).map((f) => {
    const name = NAMES[f.type] ?? `type${f.type}`;
    if (f.type === T.RST_STREAM || f.type === T.GOAWAY) return `${name}(s${f.stream}, code ${f.payload.readUInt32BE(f.type === T.GOAWAY ? 4 : 0)})`;
    if (f.type === T.HEADERS) return `${name}(s${f.stream}, :status ${statusOf(f.payload)})`;
    return `${name}(s${f.stream}, flags ${f.flags})`;
  }).join(', ');
}
