// Our gRPC transport and etcd client (src/storage/etcd3/grpc.ts, client.ts). Against a real etcd: members
// that are down, hang, or pause; big responses; close(). Against a local HTTP/2 server, what a real etcd
// cannot be made to send: messages cut anywhere, compressed or extra messages, non-gRPC answers, resets.
import assert from 'node:assert/strict';
import { createServer as createH2Server, constants, type ClientHttp2Session, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { rootCertificates } from 'node:tls';
import fc from 'fast-check';
import { connectEtcd, CALL_TIMEOUT_MS, type EtcdClient, type IWatchResponse } from '../../src/storage/etcd3/client.js';
import { GrpcChannel, GrpcError, GrpcStatus } from '../../src/storage/etcd3/grpc.js';
import { freePort } from '../cluster/controlPlane.js';
import { startEtcd, type TestEtcd } from '../helpers/etcd.js';

const CASE = { timeout: 60_000 };
const key = (k: string) => Buffer.from(`/grpc-test/${k}`);

/** A TCP server that accepts connections and never answers: a member that hangs (also in a TLS handshake). */
async function hungServer(): Promise<{ url: string; port: number; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((s) => { connections++; sockets.add(s); s.on('error', () => {}); });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${port}`, port, connections: () => connections,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

describe('etcd client against a real etcd', () => {
  let etcd: TestEtcd;
  const clients: EtcdClient[] = [];
  const client = (hosts: string[]) => { const c = connectEtcd({ hosts }); clients.push(c); return c; };
  before(async () => { etcd = await startEtcd(); });
  after(async () => { for (const c of clients) c.close(); await etcd?.stop(); });

  it('a member that hangs: a call fails after the call timeout (DEADLINE_EXCEEDED) and the next goes to another member', CASE, async () => {
    const hung = await hungServer();
    try {
      // The first member a client uses is random: 8 clients at once, each order, 3 calls one after another.
      await Promise.all([[hung.url, etcd.url], [etcd.url, hung.url]].flatMap((hosts) => Array.from({ length: 4 }, async () => {
        const c = client(hosts);
        const errors: string[] = [];
        for (let i = 0; i < 3; i++) await c.range({ key: key('x') }).catch((e: Error) => { errors.push(e.message); });
        assert.ok(errors.length <= 1, `failed calls with members ${hosts.join(', ')}: ${errors.join('; ')}`);
        for (const m of errors) assert.match(m, /^4 DEADLINE_EXCEEDED/);
      })));
    } finally {
      await hung.close();
    }
  });

  it('etcd paused (SIGSTOP): calls fail within the call timeout, an open watch ends within the keepalive (~15 s); resumed: calls work', CASE, async () => {
    const c = client([etcd.url]);
    await c.txn({ success: [{ request_put: { key: key('paused'), value: Buffer.from('1') } }] });
    const stream = await c.watchStream();
    const ended = new Promise<string>((resolve) => {
      stream.on('error', (e) => resolve(`error: ${e.message}`));
      stream.on('end', () => resolve('end'));
    });
    const created = new Promise<IWatchResponse>((resolve) => stream.on('data', resolve));
    stream.write({ create_request: { key: key('paused') } });
    assert.equal((await created).created, true);
    etcd.pause(true);
    try {
      const t0 = Date.now();
      await assert.rejects(c.range({ key: key('paused') }), /DEADLINE_EXCEEDED/);
      assert.ok(Date.now() - t0 < CALL_TIMEOUT_MS + 1_000, `the call took ${Date.now() - t0} ms`);
      const end = await Promise.race([ended, new Promise<string>((r) => setTimeout(() => r('still open'), 20_000))]);
      assert.match(end, /^error: 14 UNAVAILABLE/, 'the watch stream ends with an error once its pings go unanswered');
    } finally {
      etcd.pause(false);
    }
    const res = await c.range({ key: key('paused') });
    assert.equal(res.kvs[0]?.value.toString(), '1');
  });

  it('big responses arrive whole: 1,000 keys of 8 KiB in one Range (~8 MiB), a 3 MiB value', CASE, async () => {
    const c = client([etcd.url]);
    const value = (i: number) => Buffer.alloc(8 * 1024, String.fromCharCode(97 + (i % 26)));
    for (let i = 0; i < 1000; i += 100) {
      await c.txn({ success: Array.from({ length: 100 }, (_, j) => ({ request_put: { key: key(`big/${String(i + j).padStart(4, '0')}`), value: value(i + j) } })) });
    }
    const res = await c.range({ key: key('big/'), range_end: key('big0') });
    assert.equal(res.kvs.length, 1000);
    res.kvs.forEach((kv, i) => assert.ok(kv.value.equals(value(i)), `value ${i}`));
    const three = Buffer.alloc(3 * 1024 * 1024, 'z');
    await c.txn({ success: [{ request_put: { key: key('three'), value: three } }] });
    assert.ok((await c.range({ key: key('three') })).kvs[0]?.value.equals(three));
  });

  it('a revision no etcd has reached, up to int64\'s limit, is etcd\'s "future revision", not a client error', CASE, async () => {
    const c = client([etcd.url]);
    for (const revision of [2 ** 40, 2 ** 53 + 2, 2 ** 62]) {
      await assert.rejects(c.range({ key: key('x'), revision }), /future revision/);
    }
  });

  it('a member that never finishes its TLS handshake: a call\'s deadline still ends it, and the connection is dialed again after 5 s', CASE, async () => {
    const hung = await hungServer();
    const channel = new GrpcChannel(`https://127.0.0.1:${hung.port}`, { rootCertificate: Buffer.from(rootCertificates[0]!) });
    try {
      const t0 = Date.now();
      await assert.rejects(channel.unary('/etcdserverpb.KV/Range', Buffer.alloc(0), 300), /DEADLINE_EXCEEDED/);
      assert.ok(Date.now() - t0 < 1_500, `the deadline took ${Date.now() - t0} ms`);
      const s = channel.stream('/etcdserverpb.Watch/Watch');
      const ended = new Promise<string>((r) => s.on('error', (e: Error) => r(e.message)));
      setTimeout(() => s.cancel(), 100);
      assert.match(await ended, /CANCELLED/);
      assert.equal(hung.connections(), 1);
      await new Promise((r) => setTimeout(r, 5_500));
      await assert.rejects(channel.unary('/etcdserverpb.KV/Range', Buffer.alloc(0), 300), /DEADLINE_EXCEEDED/);
      assert.equal(hung.connections(), 2, 'a connection that never came up was given up on and dialed again');
    } finally {
      channel.close();
      await hung.close();
    }
  });

  it('a watch stream cancelled before anyone listens ends quietly (no unhandled error event)', CASE, async () => {
    const c = client([etcd.url]);
    const w = await c.watchStream();
    w.cancel();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await c.range({ key: key('x') })).header.revision > 0, true);
  });

  it('close(): calls after it fail at once; a watch stream waiting for a member that hangs gives up at once', CASE, async () => {
    const c = connectEtcd({ hosts: [etcd.url] });
    await c.range({ key: key('x') });
    c.close();
    const t0 = Date.now();
    await assert.rejects(c.range({ key: key('x') }), /closed/);
    assert.ok(Date.now() - t0 < 500, `${Date.now() - t0} ms`);
    // A watch stream waits for its member to connect (retrying a refused one): close() ends the wait.
    const down = connectEtcd({ hosts: [`http://127.0.0.1:${await freePort()}`] });
    const waiting = down.watchStream();
    setTimeout(() => down.close(), 300);
    const t1 = Date.now();
    await assert.rejects(waiting, /closed/);
    assert.ok(Date.now() - t1 < 2_000, `${Date.now() - t1} ms`);
  });
});

/** A local HTTP/2 server answering every call with `answer`. */
async function h2Server(answer: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void): Promise<{ channel: GrpcChannel; close(): Promise<void> }> {
  const server: Http2Server = createH2Server();
  server.on('stream', (stream, headers) => { stream.on('error', () => {}); answer(stream, headers); });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const channel = new GrpcChannel(`http://127.0.0.1:${port}`, undefined);
  return { channel, close: () => { channel.close(); return new Promise((r) => server.close(() => r())); } };
}

/** A gRPC message: compressed flag, big-endian length, bytes. */
function framed(m: Buffer, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(m.length, 1);
  return Buffer.concat([head, m]);
}
const okTrailers = { 'grpc-status': '0' };

describe('gRPC transport against a local HTTP/2 server', () => {
  it('messages cut anywhere across DATA frames are put back together', CASE, async () => {
    let plan: number[] = [];
    let messages: Buffer[] = [];
    const srv = await h2Server((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      const all = Buffer.concat(messages.map((m) => framed(m)));
      let at = 0;
      for (const cut of [...plan, all.length]) {
        if (cut > at) stream.write(all.subarray(at, cut));
        at = Math.max(at, cut);
      }
      stream.on('wantTrailers', () => stream.sendTrailers(okTrailers));
      stream.end();
    });
    try {
      await fc.assert(fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 4 }), fc.array(fc.nat({ max: 1300 }), { maxLength: 12 }), async (ms, cuts) => {
        messages = ms.map((m) => Buffer.from(m));
        const total = messages.reduce((n, m) => n + 5 + m.length, 0);
        plan = cuts.map((c) => c % (total + 1)).sort((a, b) => a - b);
        const s = srv.channel.stream('/test/Stream');
        const got: Buffer[] = [];
        await new Promise<void>((resolve, reject) => {
          s.on('message', (m: Buffer) => got.push(Buffer.from(m)));
          s.on('end', resolve);
          s.on('error', reject);
        });
        assert.deepEqual(got, messages);
      }), { numRuns: 60 });
    } finally {
      await srv.close();
    }
  });

  const answers: { name: string; answer: (s: ServerHttp2Stream) => void; error: RegExp; code: number }[] = [
    { name: 'two messages to a unary call', code: GrpcStatus.INTERNAL, error: /more than one response message/, answer: (s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers(okTrailers));
      s.end(Buffer.concat([framed(Buffer.from('a')), framed(Buffer.from('b'))]));
    } },
    { name: 'no message with status OK', code: GrpcStatus.INTERNAL, error: /no response message/, answer: (s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true });
    } },
    { name: 'a compressed message', code: GrpcStatus.INTERNAL, error: /compressed/, answer: (s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' });
      s.write(framed(Buffer.from('x'), true));
    } },
    { name: 'an HTTP 503 that is not gRPC', code: GrpcStatus.UNAVAILABLE, error: /HTTP status 503/, answer: (s) => {
      s.respond({ ':status': 503, 'content-type': 'text/plain' });
      s.end('busy');
    } },
    { name: 'a status in the headers (Trailers-Only), its message percent-encoded', code: 9, error: /^9 FAILED_PRECONDITION: etcdserver: mvcc: required revision has been compacted ✓$/, answer: (s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '9', 'grpc-message': encodeURIComponent('etcdserver: mvcc: required revision has been compacted ✓') }, { endStream: true });
    } },
    { name: 'a stream reset by the server', code: GrpcStatus.UNAVAILABLE, error: /UNAVAILABLE/, answer: (s) => {
      s.close(constants.NGHTTP2_INTERNAL_ERROR);
    } },
    { name: 'no answer at all', code: GrpcStatus.DEADLINE_EXCEEDED, error: /context deadline exceeded/, answer: () => {} },
  ];
  for (const a of answers) {
    it(`a unary call answered with ${a.name}: GrpcError ${a.code}, never a hang`, CASE, async () => {
      const srv = await h2Server(a.answer);
      try {
        const t0 = Date.now();
        const err = await srv.channel.unary('/test/Unary', Buffer.from('q'), 500).then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof GrpcError, String(err));
        assert.equal(err.code, a.code, err.message);
        assert.match(err.message, a.error);
        assert.ok(Date.now() - t0 < 2_000, `${Date.now() - t0} ms`);
      } finally {
        await srv.close();
      }
    });
  }

  it('a connection out of stream ids (2^30 calls) is replaced: later calls work', CASE, async () => {
    const srv = await h2Server((st) => {
      st.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      st.on('wantTrailers', () => st.sendTrailers(okTrailers));
      st.end(framed(Buffer.from('r')));
    });
    try {
      await srv.channel.unary('/test/Unary', Buffer.from('q'), 1_000);
      // White box: the channel's connection, moved to the end of its stream ids.
      const session = (srv.channel as unknown as { session: ClientHttp2Session & { setNextStreamID(id: number): void } }).session;
      session.setNextStreamID(2 ** 31 - 3);
      const results: string[] = [];
      for (let i = 0; i < 6; i++) results.push(await srv.channel.unary('/test/Unary', Buffer.from('q'), 1_000).then((b) => b.toString(), (e: Error) => e.message));
      assert.deepEqual(results.slice(-3), ['r', 'r', 'r'], results.join('; '));
      assert.ok(results.filter((r) => r !== 'r').length <= 1, results.join('; '));
    } finally {
      await srv.close();
    }
  });

  it('a request carries gRPC\'s headers, its deadline, and hasleader (a member without a leader answers at once)', CASE, async () => {
    let seen: IncomingHttpHeaders = {};
    const srv = await h2Server((s, headers) => {
      seen = headers;
      s.on('data', () => {});
      s.on('end', () => {
        s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers(okTrailers));
        s.end(framed(Buffer.from('r')));
      });
    });
    try {
      const res = await srv.channel.unary('/etcdserverpb.KV/Range', Buffer.from('q'), 1234);
      assert.equal(res.toString(), 'r');
      assert.equal(seen[':path'], '/etcdserverpb.KV/Range');
      assert.equal(seen['content-type'], 'application/grpc');
      assert.equal(seen.te, 'trailers');
      assert.equal(seen['grpc-timeout'], '1234m');
      assert.equal(seen.hasleader, 'true');
    } finally {
      await srv.close();
    }
  });
});
