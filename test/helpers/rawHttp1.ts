// Raw HTTP/1.1 over a socket of our own: what a client receives byte for byte, and a strict parser of
// the responses in it (chunk framing included), for tests about connections and wire framing.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** A client socket that records what it received and when it closed; it never throws. */
export class RawConn {
  readonly openedAt = performance.now();
  private chunks: Buffer[] = [];
  closedAt: number | undefined;
  error: string | undefined;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.on('data', (c: Buffer) => { this.chunks.push(c); this.wake(); });
    socket.on('error', (e: NodeJS.ErrnoException) => { this.error = e.code ?? e.message; });
    socket.on('close', () => { this.closedAt = performance.now(); this.wake(); });
  }

  /**
   * Resolves once the TLS handshake is done (the server's certificate is verified against `ca`).
   * `alpn: false` offers no ALPN at all (an HTTP/1 client that predates it).
   */
  static tls(port: number, ca: string, alpn = true): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const sock = tlsConnect({ host: '127.0.0.1', port, ca, ...(alpn && { ALPNProtocols: ['http/1.1'] }) });
      const conn = new RawConn(sock);
      sock.once('secureConnect', () => resolve(conn));
      sock.once('error', reject);
      sock.once('close', () => reject(new Error('closed during the TLS handshake')));
    });
  }

  /** A plain TCP connection (to a TLS port: it never starts, or never finishes, a handshake). */
  static tcp(port: number): Promise<RawConn> {
    return new Promise((resolve, reject) => {
      const sock = netConnect({ host: '127.0.0.1', port });
      const conn = new RawConn(sock);
      sock.once('connect', () => resolve(conn));
      sock.once('error', reject);
    });
  }

  get data(): Buffer { return Buffer.concat(this.chunks); }
  get closed(): boolean { return this.closedAt !== undefined; }

  write(bytes: string | Buffer): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  private wake(): void { const ws = this.waiters; this.waiters = []; for (const w of ws) w(); }

  /** Waits until `done()` or the timeout; returns done(). */
  async until(done: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!done()) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => { const t = setTimeout(r, left); this.waiters.push(() => { clearTimeout(t); r(); }); });
    }
    return true;
  }

  waitClosed(timeoutMs: number): Promise<boolean> { return this.until(() => this.closed, timeoutMs); }

  /** Waits for `count` complete responses (or the close); returns what was parsed so far. */
  async response(timeoutMs: number, count = 1, methods: string[] = []): Promise<Parsed> {
    await this.until(() => this.closed || parseResponses(this.data, false, methods).responses.length >= count, timeoutMs);
    return parseResponses(this.data, this.closed, methods);
  }

  destroy(): void { this.socket.destroy(); }
}

export interface RawResponse {
  status: number; headers: Record<string, string>; body: string; raw: string;
  /** The body's chunks as framed (chunked responses only). */
  chunks?: string[];
}
export interface Parsed { responses: RawResponse[]; rest: string }

/** What the chunks from `at` hold: undefined while incomplete; throws on framing a client must reject. */
function chunked(text: string, at: number): { chunks: string[]; end: number } | undefined {
  const chunks: string[] = [];
  let p = at;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', p);
    if (lineEnd < 0) return undefined;
    const sizeText = text.slice(p, lineEnd);
    if (!/^[0-9a-fA-F]{1,16}$/.test(sizeText)) throw new Error(`bad chunk size line ${JSON.stringify(sizeText.slice(0, 80))} at ${p}`);
    const size = parseInt(sizeText, 16);
    if (size === 0) {
      // No trailers are sent: the last chunk is followed by the empty line.
      if (text.length < lineEnd + 4) return undefined;
      if (text.slice(lineEnd + 2, lineEnd + 4) !== '\r\n') throw new Error(`no CRLF after the last chunk at ${lineEnd + 2}`);
      return { chunks, end: lineEnd + 4 };
    }
    const dataEnd = lineEnd + 2 + size;
    if (text.length < dataEnd + 2) return undefined;
    if (text.slice(dataEnd, dataEnd + 2) !== '\r\n') throw new Error(`chunk of ${size} bytes not followed by CRLF at ${dataEnd}`);
    chunks.push(text.slice(lineEnd + 2, dataEnd));
    p = dataEnd + 2;
  }
}

/**
 * Parses the HTTP/1.1 responses in `buf`; an incomplete last one stays in `rest` (unless `eof` ends its body).
 * `methods` are the requests' methods in order (a HEAD response has no body). Broken chunk framing throws.
 */
export function parseResponses(buf: Buffer, eof: boolean, methods: string[] = []): Parsed {
  const text = buf.toString('latin1');
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const [statusLine, ...lines] = text.slice(at, headEnd).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const bodyStart = headEnd + 4;
    let body: string;
    let end: number;
    let chunks: string[] | undefined;
    if (methods[responses.length] === 'HEAD' || /^(1\d\d|204|304)$/.test(m[1])) {
      end = bodyStart; body = '';
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const c = chunked(text, bodyStart);
      if (!c) break;
      ({ chunks, end } = c);
      body = chunks.join('');
    } else if (headers['content-length'] !== undefined) {
      end = bodyStart + Number(headers['content-length']);
      if (text.length < end) break;
      body = text.slice(bodyStart, end);
    } else {
      if (!eof) break; // the body runs to the close
      end = text.length; body = text.slice(bodyStart);
    }
    responses.push({ status: Number(m[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8'), raw: text.slice(at, end), ...(chunks && { chunks }) });
    at = end;
  }
  return { responses, rest: text.slice(at) };
}
