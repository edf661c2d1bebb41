// Client-certificate authentication costs one chain parse and one verification per connection and CA
// bundle, not per request — and a rotated bundle still decides the very next request on an open
// connection. Real HTTPS server, real TLS client certificates, keep-alive connections.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:http2';
import { allowAll } from '../../src/server/auth/standalone.js';
import { clientCertAuthenticator, parseTrust, requestHeaderAuthenticator, type AuthenticationTrust } from '../../src/server/auth/delegated.js';
import { verifiesAgainst, x509Work, type PeerCert } from '../../src/server/auth/x509.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { makeCa, makeClientCert, type Pem } from '../helpers/pki.js';

const LIST = '/apis/farm.example.com/v1alpha/namespaces/default/llamas';

function trustOf(frontProxyCa: Pem, clientCa: Pem): AuthenticationTrust {
  return parseTrust({ data: {
    'client-ca-file': clientCa.cert,
    'requestheader-client-ca-file': frontProxyCa.cert,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-username-headers': '["X-Remote-User"]',
    'requestheader-group-headers': '["X-Remote-Group"]',
    'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
  } });
}

let srv: TestServer;
let trust: AuthenticationTrust;
let frontProxyCa: Pem, clientCa: Pem, frontProxy: Pem, admin: Pem;

before(async () => {
  [frontProxyCa, clientCa] = await Promise.all([makeCa('front-proxy-ca'), makeCa('client-ca')]);
  [frontProxy, admin] = await Promise.all([makeClientCert(frontProxyCa, 'front-proxy-client'), makeClientCert(clientCa, 'admin', ['system:masters'])]);
  trust = trustOf(frontProxyCa, clientCa);
  const current = () => trust;
  srv = await startTestServer({ auth: { authenticators: [requestHeaderAuthenticator(current), clientCertAuthenticator(current)], rejectAnonymous: true, authorizer: allowAll } });
});
after(() => srv?.close());

/** `n` GETs on one keep-alive connection; returns their statuses and how many sockets were used. */
async function onOneConnection(as: Pem, n: number, headers: Record<string, string> = {}): Promise<{ statuses: number[]; sockets: number; agent: Agent }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: srv.caPem, cert: as.cert, key: as.key });
  const statuses: number[] = [];
  const sockets = new Set<unknown>();
  for (let i = 0; i < n; i++) statuses.push(await get(agent, headers, sockets));
  return { statuses, sockets: sockets.size, agent };
}

function get(agent: Agent, headers: Record<string, string>, sockets = new Set<unknown>()): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${srv.url}${LIST}`, { agent, headers }, (res) => {
      sockets.add(res.socket);
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('client certificate work per connection', () => {
  it('front-proxy certificate: 50 requests on one connection parse and verify the chain once', async () => {
    const before = { ...x509Work };
    const r = await onOneConnection(frontProxy, 50, { 'X-Remote-User': 'root', 'X-Remote-Group': 'system:masters' });
    r.agent.destroy();
    assert.deepEqual(new Set(r.statuses), new Set([200]));
    assert.equal(r.sockets, 1, 'the agent kept one connection');
    assert.equal(x509Work.chainParses - before.chainParses, 1);
    assert.equal(x509Work.verifications - before.verifications, 1);
  });

  it('ordinary client certificate: one parse, one refusal by the front-proxy CA and one acceptance by the client CA', async () => {
    const before = { ...x509Work };
    const r = await onOneConnection(admin, 50);
    r.agent.destroy();
    assert.deepEqual(new Set(r.statuses), new Set([200]));
    assert.equal(x509Work.chainParses - before.chainParses, 1);
    assert.equal(x509Work.verifications - before.verifications, 2);
  });

  it('each new connection is verified afresh', async () => {
    const before = { ...x509Work };
    for (let i = 0; i < 3; i++) (await onOneConnection(admin, 2)).agent.destroy();
    assert.equal(x509Work.chainParses - before.chainParses, 3);
  });

  it('a rotated CA bundle decides the next request on an already open connection', async () => {
    const proxyHeaders = { 'X-Remote-User': 'root', 'X-Remote-Group': 'system:masters' };
    const proxy = await onOneConnection(frontProxy, 2, proxyHeaders);
    const client = await onOneConnection(admin, 2);
    const original = trust;
    try {
      const [otherCa, otherClientCa] = await Promise.all([makeCa('rotated-front-proxy-ca'), makeCa('rotated-client-ca')]);
      trust = trustOf(otherCa, otherClientCa);
      const sockets = new Set<unknown>();
      assert.equal(await get(proxy.agent, proxyHeaders, sockets), 401, 'old front-proxy certificate refused at once');
      assert.equal(await get(client.agent, {}, sockets), 401, 'old client certificate refused at once');
      trust = original;
      assert.equal(await get(proxy.agent, proxyHeaders, sockets), 200, 'trusted again after rotating back');
      assert.equal(await get(client.agent, {}, sockets), 200);
      assert.equal(sockets.size, 2, 'both agents kept their first connection throughout');
    } finally {
      trust = original;
      proxy.agent.destroy();
      client.agent.destroy();
    }
  });
});

describe('verdicts follow the validity window', () => {
  it('a cached acceptance ends when the leaf expires, and a refusal before notBefore ends when it starts', async () => {
    const ca = await makeCa('window-ca');
    const now = Date.now();
    const leafPem = await makeClientCert(ca, 'someone', [], { notBefore: new Date(now + 60_000), notAfter: new Date(now + 120_000) });
    const leaf = new X509Certificate(leafPem.cert);
    const peer: PeerCert = { chain: [leaf], subject: { CN: 'someone' }, verdicts: new WeakMap() };
    const roots = [new X509Certificate(ca.cert)];
    const from = Date.parse(leaf.validFrom);
    const to = Date.parse(leaf.validTo);
    assert.equal(verifiesAgainst(peer, roots, from - 1000), false, 'not yet valid');
    assert.equal(verifiesAgainst(peer, roots, from + 1000), true, 'valid once notBefore passed');
    assert.equal(verifiesAgainst(peer, roots, to - 1000), true);
    assert.equal(verifiesAgainst(peer, roots, to + 1000), false, 'expired');
    const before = x509Work.verifications;
    assert.equal(verifiesAgainst(peer, roots, to + 2000), false);
    assert.equal(x509Work.verifications, before, 'a refusal inside the same window is not re-verified');
  });
});

describe('front-proxy identity over HTTP/2', () => {
  it('repeated X-Remote-Group fields stay distinct and UTF-8 names arrive decoded, as over HTTP/1.1', async () => {
    const seen: Array<{ username: string; groups: string[]; extra: Record<string, string[]> }> = [];
    const recording = { async authorize(user: { username: string; groups: string[]; extra: Record<string, string[]> }) { seen.push(user); return { allowed: true }; } };
    const current = () => trust;
    const own = await startTestServer({ auth: { authenticators: [requestHeaderAuthenticator(current)], rejectAnonymous: true, authorizer: recording } });
    const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
    const session = connect(own.url, { ca: own.caPem, cert: frontProxy.cert, key: frontProxy.key });
    try {
      for (const name of ['José', 'llama-🦙', 'plain', '名前']) {
        seen.length = 0;
        const req = session.request({
          ':path': LIST, 'x-remote-user': latin1(name), 'x-remote-group': ['a, b', latin1('grüppe'), 'system:masters'],
          'x-remote-extra-scopes': ['one', 'two'],
        });
        req.resume();
        const [h] = await once(req, 'response') as [Record<string, unknown>];
        await once(req, 'end');
        assert.equal(h[':status'], 200);
        assert.equal(seen.length, 1);
        assert.equal(seen[0].username, name);
        assert.deepEqual(seen[0].groups.filter((g) => g !== 'system:authenticated'), ['a, b', 'grüppe', 'system:masters']);
        assert.deepEqual(seen[0].extra, { scopes: ['one', 'two'] });
      }
    } finally { session.destroy(); await own.close(); }
  });
});
