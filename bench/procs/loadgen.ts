// Child process: a closed-loop HTTP/1.1 load generator over keep-alive TLS connections.
// Each connection has one request in flight (no pipelining) and sends the next as soon as the
// previous response is complete. Responses are parsed just enough to find their end (Content-Length
// or chunked) and checked for status 200 and a constant size; bodies are counted, not kept.
// Optional (bench/suites/peers.ts): a TLS client certificate, another method with a body, other
// expected statuses, no size check, a request cap, and templates in the path and body:
//   {{seq}}  a number unique to each request of this process (e.g. a label value, so a PUT changes something)
//   {{req}}  like {{seq}}, but the same number at every place of one request (e.g. a name in both the path and the body)
//   {{conn}} the connection's index (e.g. one object per connection, so PUTs never conflict)
//   {{rv}}   the metadata.resourceVersion of this connection's previous response (first: an untimed GET of the path)
import { readFileSync } from 'node:fs';
import { connect, type TLSSocket } from 'node:tls';
import { cpuTotalMs, nowMs, percentile, serveIpc } from '../lib/common.js';

export interface RunArgs {
  port: number; path: string; headers: Record<string, string>; caFile: string;
  connections: number; warmupMs: number; durationMs: number;
  /** Default GET. */
  method?: string;
  /** Sent with a Content-Length; may hold the templates above. */
  body?: string;
  /** A TLS client certificate (PEM files). */
  certFile?: string; keyFile?: string;
  /** Statuses that count as success; default [200]. */
  expectStatus?: number[];
  /** Check that every response has the size of the first; default true. */
  sameSize?: boolean;
  /** Stop once this many requests have completed (durationMs stays the upper bound). */
  maxRequests?: number;
}

export interface RunResult {
  /** Completed in the measured window. */
  requests: number;
  /** Completed from the first request to the end, warm-up included (to divide the server's CPU time by). */
  totalRequests: number;
  rps: number; responseBytes: number; errors: number; firstError?: string;
  latencyMs: { p50: number; p99: number }; clientCpuPct: number; durationMs: number;
}

const CRLF2 = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const RV_RE = /"resourceVersion":"(\d+)"/;
const TEMPLATE_RE = /\{\{(seq|req|conn|rv)\}\}/g;
/** {{seq}} counter; per process, so values stay unique across runs. */
let seq = 0;

class Conn {
  private buf: Buffer = Buffer.alloc(0);
  private state: 'head' | 'body' | 'chunkSize' | 'chunkData' | 'chunkEnd' | 'trailer' = 'head';
  private remaining = 0;
  private status = 0;
  private size = 0;
  private sentAt = 0;
  private readonly sock: TLSSocket;
  closed = false;

  /** This connection's last seen metadata.resourceVersion (for {{rv}}). */
  rv: string | undefined;
  private priming = false;
  private kept: Buffer[] = [];

  constructor(private readonly g: Generator, port: number, ca: Buffer, onConnect: () => void, readonly index = 0, tls: { cert?: Buffer; key?: Buffer } = {}) {
    this.sock = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...tls }, onConnect);
    this.sock.setNoDelay(true);
    this.sock.on('data', (c: Buffer) => this.onData(c));
    this.sock.on('error', (e) => this.g.fail(`socket: ${e.message}`));
    this.sock.on('close', () => { this.closed = true; if (this.g.running) this.g.fail('connection closed by server'); });
  }

  send(): void {
    this.state = 'head';
    this.size = 0;
    this.kept = [];
    this.sentAt = nowMs();
    this.priming = this.g.needsRv && this.rv === undefined;
    if (!this.priming) this.g.sent++;
    this.sock.write(this.priming ? this.g.primeRequest(this) : this.g.requestFor(this));
  }

  destroy(): void { this.sock.destroy(); }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      switch (this.state) {
        case 'head': {
          const end = this.buf.indexOf(CRLF2);
          if (end < 0) return;
          const head = this.buf.toString('latin1', 0, end);
          this.buf = this.buf.subarray(end + 4);
          this.status = Number(head.slice(9, 12));
          const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
          if (cl) { this.remaining = Number(cl[1]); this.state = 'body'; }
          else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) this.state = 'chunkSize';
          else { this.g.fail(`response without length: ${head.slice(0, 80)}`); this.sock.destroy(); return; }
          if (this.state === 'body' && this.remaining === 0) { this.done(); }
          break;
        }
        case 'body': {
          const n = Math.min(this.remaining, this.buf.length);
          this.remaining -= n; this.size += n;
          if (this.g.needsRv) this.kept.push(this.buf.subarray(0, n));
          this.buf = this.buf.subarray(n);
          if (this.remaining > 0) return;
          this.done();
          break;
        }
        case 'chunkSize': {
          const end = this.buf.indexOf(CRLF);
          if (end < 0) return;
          this.remaining = parseInt(this.buf.toString('latin1', 0, end), 16);
          this.buf = this.buf.subarray(end + 2);
          this.state = this.remaining === 0 ? 'trailer' : 'chunkData';
          break;
        }
        case 'chunkData': {
          const n = Math.min(this.remaining, this.buf.length);
          this.remaining -= n; this.size += n;
          if (this.g.needsRv) this.kept.push(this.buf.subarray(0, n));
          this.buf = this.buf.subarray(n);
          if (this.remaining > 0) return;
          this.state = 'chunkEnd';
          break;
        }
        case 'chunkEnd': {
          if (this.buf.length < 2) return;
          this.buf = this.buf.subarray(2);
          this.state = 'chunkSize';
          break;
        }
        case 'trailer': {
          const end = this.buf.indexOf(CRLF);
          if (end < 0) return;
          this.buf = this.buf.subarray(end + 2);
          if (end === 0) this.done();
          break;
        }
      }
      if ((this.state as string) === 'head' && this.buf.length === 0) return;
    }
  }

  private done(): void {
    this.state = 'head';
    if (this.g.needsRv) {
      const m = RV_RE.exec(Buffer.concat(this.kept).toString('latin1'));
      this.kept = [];
      if (m) this.rv = m[1];
    }
    if (this.priming) {
      this.priming = false;
      if (this.status !== 200 || this.rv === undefined) { this.g.fail(`priming GET: status ${this.status}, resourceVersion ${this.rv}`); this.rv = undefined; return; }
      if (this.g.running) this.send();
      return;
    }
    this.g.completed(this, this.status, this.size, nowMs() - this.sentAt);
  }
}

class Generator {
  running = true;
  measuring = false;
  count = 0;
  total = 0;
  errors = 0;
  firstError: string | undefined;
  expectedSize = -1;
  latencies: number[] = [];
  /** Requests sent (priming GETs excepted), to stop at maxRequests. */
  sent = 0;
  readonly needsRv: boolean;
  readonly expectStatus: number[];
  readonly sameSize: boolean;
  readonly maxRequests: number;
  onCap: () => void = () => {};
  private readonly fixed: Buffer | undefined;
  private readonly headerLines: string;

  constructor(private readonly a: RunArgs) {
    this.headerLines = Object.entries({ host: `127.0.0.1:${a.port}`, ...a.headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    const templated = TEMPLATE_RE.test(a.path) || (a.body !== undefined && TEMPLATE_RE.test(a.body));
    TEMPLATE_RE.lastIndex = 0;
    this.needsRv = a.path.includes('{{rv}}') || (a.body?.includes('{{rv}}') ?? false);
    this.fixed = templated ? undefined : this.build(a.path, a.body);
    this.expectStatus = a.expectStatus ?? [200];
    this.sameSize = a.sameSize ?? true;
    this.maxRequests = a.maxRequests ?? Infinity;
  }

  private build(path: string, body: string | undefined): Buffer {
    const len = body === undefined ? '' : `content-length: ${Buffer.byteLength(body)}\r\n`;
    return Buffer.from(`${this.a.method ?? 'GET'} ${path} HTTP/1.1\r\n${this.headerLines}${len}\r\n${body ?? ''}`, 'utf8');
  }

  requestFor(c: Conn): Buffer {
    if (this.fixed) return this.fixed;
    let req: string | undefined;
    const sub = (s: string) => s.replace(TEMPLATE_RE, (_m, k: string) => (k === 'seq' ? String(++seq) : k === 'req' ? (req ??= String(++seq)) : k === 'conn' ? String(c.index) : (c.rv ?? '')));
    return this.build(sub(this.a.path), this.a.body === undefined ? undefined : sub(this.a.body));
  }

  /** The untimed GET that gives a connection its first {{rv}}. */
  primeRequest(c: Conn): Buffer {
    const path = this.a.path.replace(TEMPLATE_RE, (_m, k: string) => (k === 'conn' ? String(c.index) : ''));
    return Buffer.from(`GET ${path} HTTP/1.1\r\n${this.headerLines}\r\n`, 'latin1');
  }

  fail(why: string): void {
    this.errors++;
    this.firstError ??= why;
  }

  completed(c: Conn, status: number, size: number, latency: number): void {
    if (!this.expectStatus.includes(status)) this.fail(`status ${status}`);
    else if (this.expectedSize < 0) this.expectedSize = size;
    else if (this.sameSize && size !== this.expectedSize) this.fail(`response size ${size} != ${this.expectedSize}`);
    this.total++;
    if (this.measuring) { this.count++; this.latencies.push(latency); }
    if (this.total >= this.maxRequests) this.onCap();
    if (this.running && this.sent < this.maxRequests) c.send();
  }
}

async function run(a: RunArgs): Promise<RunResult> {
  const ca = readFileSync(a.caFile);
  const tls = a.certFile && a.keyFile ? { cert: readFileSync(a.certFile), key: readFileSync(a.keyFile) } : {};
  const g = new Generator(a);
  const capped = new Promise<void>((r) => { g.onCap = r; });
  const conns: Conn[] = [];
  await Promise.all(Array.from({ length: a.connections }, (_x, i) => new Promise<void>((resolve) => {
    conns.push(new Conn(g, a.port, ca, resolve, i, tls));
  })));
  for (const c of conns) if (g.sent < g.maxRequests) c.send();
  await Promise.race([new Promise((r) => setTimeout(r, a.warmupMs)), capped]);
  const cpu0 = cpuTotalMs();
  const t0 = nowMs();
  g.measuring = true;
  await Promise.race([new Promise((r) => setTimeout(r, a.durationMs)), capped]);
  g.measuring = false;
  const elapsed = nowMs() - t0;
  const cpu = cpuTotalMs() - cpu0;
  g.running = false;
  await new Promise((r) => setTimeout(r, 50));
  for (const c of conns) c.destroy();
  const lat = Float64Array.from(g.latencies).sort();
  return {
    requests: g.count, totalRequests: g.total, rps: (g.count * 1000) / elapsed, responseBytes: g.expectedSize, errors: g.errors, firstError: g.firstError,
    latencyMs: { p50: percentile(lat, 50), p99: percentile(lat, 99) }, clientCpuPct: (100 * cpu) / elapsed, durationMs: elapsed,
  };
}

serveIpc({ run });
