// Every route answers a client's mistake with a metav1.Status whose code is the HTTP status: unknown
// methods and paths, raw bytes Node's client would never send (lowercase or odd method tokens,
// non-ASCII paths, control characters in headers), and a watch or list from a resourceVersion far
// ahead of the store (504 Timeout "Too large resource version" with Retry-After, never a stream).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { assertResponsive, assertStatus, assertWellFormed, client, ensureLlama, GROUP_VERSION, llamasOf, rawExchange, runs, type Client } from '../../helpers/adversarial.js';
import { startTestServer, type TestServer } from '../../helpers/testServer.js';

let s: TestServer;
let c: Client;
const ns = 'everywhere';
const coll = llamasOf(ns);

before(async () => { s = await startTestServer(); c = client(s); await ensureLlama(c, ns, 'dolly'); });
after(async () => { c.close(); await s.close(); });

const segment = fc.oneof(
  fc.constantFrom('apis', 'api', 'v1', 'farm.example.com', 'v1alpha', 'namespaces', ns, 'llamas', 'dolly', 'farmpods', 'status', 'scale', 'watch',
    'livez', 'readyz', 'healthz', 'openapi', 'v3', 'version', 'metrics', '..', '.', '', '%2e%2e', '%00', '%ZZ', '%2F', ';x', '~'),
  fc.string({ maxLength: 8, unit: 'binary' }).map(encodeURIComponent),
);
const anyPath = fc.oneof(
  fc.array(segment, { minLength: 1, maxLength: 7 }).map((xs) => `/${xs.join('/')}`),
  fc.tuple(fc.constantFrom(`${GROUP_VERSION}/namespaces/${ns}/llamas`, '/apis/farm.example.com', '/api/v1', '/livez', '/readyz', '/healthz'), fc.array(segment, { maxLength: 3 }))
    .map(([p, xs]) => [p, ...xs].join('/')),
);
// Methods Node's client sends as given (it upper-cases them); HEAD has no body to check.
const method = fc.oneof(
  fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'PURGE', 'LINK', 'MKCOL', 'SEARCH', 'REPORT', 'LOCK'),
  fc.stringMatching(/^[A-Z]{1,10}$/).filter((m) => m !== 'HEAD' && m !== 'CONNECT'),
);

describe('a Status for every route', () => {
  it('any method on any path: no 5xx, and anything not 2xx is a Status with code = HTTP status', async () => {
    await fc.assert(fc.asyncProperty(method, anyPath, fc.option(fc.constantFrom('{}', '[]', 'x: 1', '\u0000'), { nil: undefined }), async (m, p, body) => {
      const r = await c.send({ method: m, path: p, body });
      assertWellFormed(r, `${m} ${p}${body === undefined ? '' : ` ${JSON.stringify(body)}`}`);
    }), { ...runs(200, 20_000), examples: [['GET', '/livez/nope', undefined], ['GET', '/healthz/x', undefined], ['OPTIONS', coll, undefined]] });
    await assertResponsive(c);
  });

  it('a method a served resource does not have is a 405 MethodNotAllowed Status (go-restful matches the path, not the method)', async () => {
    const routes: [string, string[]][] = [[coll, ['GET', 'POST', 'DELETE']], [`${coll}/dolly`, ['GET', 'PUT', 'PATCH', 'DELETE']], [`${GROUP_VERSION}/llamas`, ['GET']]];
    await fc.assert(fc.asyncProperty(fc.constantFrom(...routes), method, async ([p, served], m) => {
      fc.pre(!served.includes(m));
      const st = assertStatus(await c.send({ method: m, path: `${p}?dryRun=All`, body: m === 'GET' ? undefined : '{}' }), 405, `${m} ${p}`);
      assert.equal(st.reason, 'MethodNotAllowed', `${m} ${p}`);
    }), { ...runs(60), examples: [[[coll, ['GET', 'POST', 'DELETE']], 'OPTIONS'], [[coll, ['GET', 'POST', 'DELETE']], 'PUT']] });
  });

  it('raw requests: odd method tokens, non-ASCII and control bytes in the path and in header values → a Status or a clean refusal, never a 5xx or silence', async () => {
    const tchar = fc.constantFrom(...'!#$%&\'*+-.^_`|~0123456789abcxyzABCXYZ'.split(''));
    const rawMethod = fc.oneof(fc.constantFrom('get', 'Get', 'post', 'M-SEARCH', 'G\u00e9T', ''), fc.string({ minLength: 1, maxLength: 8, unit: tchar }));
    const rawByte = fc.integer({ min: 0, max: 255 });
    const rawPath = fc.tuple(fc.constantFrom(coll, `${coll}/dolly`, '/apis', '/x'), fc.array(rawByte, { maxLength: 6 }))
      .map(([p, bytes]) => Buffer.concat([Buffer.from(p, 'latin1'), Buffer.from(bytes.filter((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x3f && b !== 0x23))]));
    const headerValue = fc.array(rawByte.filter((b) => b !== 0x0a && b !== 0x0d), { maxLength: 8 }).map((b) => Buffer.from(b));
    const headerName = fc.constantFrom('Impersonate-User', 'Accept', 'Content-Type', 'X-Anything', 'Warning', 'Audit-ID');
    await fc.assert(fc.asyncProperty(rawMethod, rawPath, headerName, headerValue, async (m, p, hn, hv) => {
      const bytes = Buffer.concat([Buffer.from(`${m} `, 'latin1'), p, Buffer.from(` HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.token}\r\n${hn}: `, 'latin1'), hv,
        Buffer.from('\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', 'latin1')]);
      const ctx = JSON.stringify(bytes.toString('latin1').replace(s.token, '<token>').slice(0, 200));
      const r = await rawExchange(s, bytes);
      assert.ok(r.status > 0, `${ctx}: no HTTP answer: ${JSON.stringify(r.head.slice(0, 100))}`);
      if (m.toUpperCase() !== 'HEAD') assertWellFormed(r, ctx);
    }), { ...runs(80, 30_000), examples: [['get', Buffer.from(coll), 'X-Anything', Buffer.from('ok')], ['GET', Buffer.from(`${coll}/d\u00f6lly`, 'utf8'), 'Impersonate-User', Buffer.from([0xff, 0xfe])]] });
    await assertResponsive(c);
  });
});

describe('resourceVersions ahead of the store', () => {
  it('watch and list from a resourceVersion far above the current one: 504 Timeout "Too large resource version" with Retry-After, not a stream', async () => {
    const current = BigInt((JSON.parse((await c.send({ method: 'GET', path: coll })).body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
    // Each request waits up to ~3 s for the store to catch up; two runs, watch and list side by side.
    await fc.assert(fc.asyncProperty(fc.bigInt({ min: 1_000n, max: 1_000_000_000_000n }), async (ahead) => {
      const rv = String(current + ahead);
      const [watch, list] = await Promise.all([
        c.send({ method: 'GET', path: `${coll}?watch=true&resourceVersion=${rv}`, stream: true, timeoutMs: 8_000 }),
        c.send({ method: 'GET', path: `${coll}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`, timeoutMs: 8_000 }),
      ]);
      for (const [what, r] of [['watch', watch], ['list', list]] as const) {
        const st = assertStatus(r, 504, `${what} from ${rv} (current ${current})`, /Too large resource version/);
        assert.equal(st.reason, 'Timeout');
        assert.ok(r.headers['retry-after'], `${what}: no Retry-After`);
        assert.ok(st.details?.causes?.some((x) => x.reason === 'ResourceVersionTooLarge'), `${what}: ${JSON.stringify(st.details)}`);
        assert.ok(r.ms < 6_000, `${what}: took ${r.ms} ms`);
      }
    }), runs(2, 20_000));
  });
});
