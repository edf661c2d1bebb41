// Child process: a closed-loop HTTP/1.1 load generator over keep-alive TLS connections.
// Each connection has one request in flight (no pipelining) and sends the next as soon as the
// previous response is complete. Responses are parsed just enough to find their end (Content-Length
// or chunked) and checked for status 200 and a constant size; bodies are counted, not kept.
import { readFileSync } from 'node:fs';
import { connect, type TLSSocket } from 'node:tls';
import { cpuTotalMs, nowMs, percentile, serveIpc } from '../lib/common.js';

interface RunArgs {
  port: number; path: string; headers: Record<string, string>; caFile: string;
  connections: number; warmupMs: number; durationMs: number;
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

class Conn {
  private buf: Buffer = Buffer.alloc(0);
  private state: 'head' | 'body' | 'chunkSize' | 'chunkData' | 'chunkEnd' | 'trailer' = 'head';
  private remaining = 0;
  private status = 0;
  private size = 0;
  private sentAt = 0;
  private readonly sock: TLSSocket;
  closed = false;

  constructor(private readonly g: Generator, port: number, ca: Buffer, onConnect: () => void) {
    this.sock = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, onConnect);
    this.sock.setNoDelay(true);
    this.sock.on('data', (c: Buffer) => this.onData(c));
    this.sock.on('error', (e) => this.g.fail(`socket: ${e.message}`));
    this.sock.on('close', () => { this.closed = true; if (this.g.running) this.g.fail('connection closed by server'); });
  }

  send(): void {
    this.state = 'head';
    this.size = 0;
    this.sentAt = nowMs();
    this.sock.write(this.g.request);
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

  constructor(readonly request: Buffer) {}

  fail(why: string): void {
    this.errors++;
    this.firstError ??= why;
  }

  completed(c: Conn, status: number, size: number, latency: number): void {
    if (status !== 200) this.fail(`status ${status}`);
    else if (this.expectedSize < 0) this.expectedSize = size;
    else if (size !== this.expectedSize) this.fail(`response size ${size} != ${this.expectedSize}`);
    this.total++;
    if (this.measuring) { this.count++; this.latencies.push(latency); }
    if (this.running) c.send();
  }
}

async function run(a: RunArgs): Promise<RunResult> {
  const ca = readFileSync(a.caFile);
  const headerLines = Object.entries({ host: `127.0.0.1:${a.port}`, ...a.headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const g = new Generator(Buffer.from(`GET ${a.path} HTTP/1.1\r\n${headerLines}\r\n`, 'latin1'));
  const conns: Conn[] = [];
  await Promise.all(Array.from({ length: a.connections }, () => new Promise<void>((resolve) => {
    conns.push(new Conn(g, a.port, ca, resolve));
  })));
  for (const c of conns) c.send();
  await new Promise((r) => setTimeout(r, a.warmupMs));
  const cpu0 = cpuTotalMs();
  const t0 = nowMs();
  g.measuring = true;
  await new Promise((r) => setTimeout(r, a.durationMs));
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
