// The test client's HTTP/2 twin: every call a stream on one TLS connection (ALPN h2), as
// kube-apiserver's aggregator and Go clients talk to us.
import { connect, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { lineStream } from './lineStream.js';
import type { Response, Stream } from './testServer.js';

type Headers = Record<string, string | string[] | undefined>;

/** Response headers without the pseudo-headers, shaped like node:https's. */
function plain(h: IncomingHttpHeaders): Headers {
  const out: Headers = {};
  for (const [k, v] of Object.entries(h)) if (!k.startsWith(':')) out[k] = v;
  return out;
}

export class Http2Client {
  private session: ClientHttp2Session | undefined;

  constructor(private readonly url: string, private readonly ca: string) {}

  /** The one connection, reopened if the server closed it (idle timeout, GOAWAY). */
  private connection(): ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      const s = connect(this.url, { ca: this.ca, maxSendHeaderBlockLength: 4 << 20 });
      s.on('error', () => {});
      s.unref();
      this.session = s;
    }
    return this.session;
  }

  private open(method: string, path: string, headers: Record<string, string>): ClientHttp2Stream {
    const h: Record<string, string> = { ':method': method, ':path': path };
    for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = v;
    const s = this.connection();
    s.ref();
    const req = s.request(h, { endStream: false });
    req.once('close', () => { if (this.session === s) s.unref(); });
    return req;
  }

  request(method: string, path: string, headers: Record<string, string>, payload?: string): Promise<Response> {
    return new Promise((resolve, reject) => {
      const req = this.open(method, path, headers);
      let status = 0;
      let resHeaders: Headers = {};
      const chunks: Buffer[] = [];
      req.on('response', (h) => { status = Number(h[':status']); resHeaders = plain(h); });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status, headers: resHeaders, body, json: () => JSON.parse(body) });
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  stream(path: string, headers: Record<string, string>): Promise<Stream> {
    return new Promise((resolve, reject) => {
      const req = this.open('GET', path, headers);
      req.end();
      req.on('error', (e) => reject(e));
      req.on('response', (h) => resolve(lineStream(req, Number(h[':status']), () => req.close())));
    });
  }

  // destroy, not close: a graceful close waits for request bodies the server chose not to read.
  close(): void { this.session?.destroy(); }
}
