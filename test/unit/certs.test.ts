import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { generate } from 'selfsigned';
import { parse } from 'yaml';
import {
  CA_COMMON_NAME, SERVING_COMMON_NAME, ensureDevCerts, ensureToken, generateToken,
} from '../../src/certs/devCerts.js';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';
import { watchServingCert, type ServingCertPem } from '../../src/certs/reload.js';
import { checkServingPair } from '../../src/certs/servingPair.js';

const DAY = 24 * 60 * 60 * 1000;

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'farm-certs-test-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const mode = async (p: string) => (await stat(p)).mode & 0o777;

function openssl(...args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

async function waitFor(cond: () => Promise<boolean> | boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('ensureDevCerts', () => {
  let dir: string;
  let first: Awaited<ReturnType<typeof ensureDevCerts>>;

  before(async () => {
    dir = join(root, 'dev', 'nested'); // does not exist yet: must be created
    first = await ensureDevCerts(dir);
  });

  it('creates ca.crt, ca.key, tls.crt, tls.key with private keys 0600', async () => {
    assert.equal(first.created, true);
    assert.equal(first.caFile, join(dir, 'ca.crt'));
    assert.equal(first.certFile, join(dir, 'tls.crt'));
    assert.equal(first.keyFile, join(dir, 'tls.key'));
    assert.equal(await mode(join(dir, 'ca.key')), 0o600);
    assert.equal(await mode(join(dir, 'tls.key')), 0o600);
    assert.equal(await mode(join(dir, 'ca.crt')), 0o644);
    assert.equal(await mode(join(dir, 'tls.crt')), 0o644);
  });

  it('does not regenerate or touch existing files on a second call', async () => {
    const files = ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'].map((f) => join(dir, f));
    const before = await Promise.all(files.map(async (f) => ({ s: await stat(f), c: await readFile(f, 'utf8') })));
    await new Promise((r) => setTimeout(r, 20));
    const second = await ensureDevCerts(dir);
    assert.equal(second.created, false);
    assert.deepEqual({ ...second, created: true }, first);
    for (const [i, f] of files.entries()) {
      const s = await stat(f);
      assert.equal(s.mtimeMs, before[i]!.s.mtimeMs, `${f} mtime changed`);
      assert.equal(s.ino, before[i]!.s.ino, `${f} replaced`);
      assert.equal(await readFile(f, 'utf8'), before[i]!.c);
    }
  });

  it('openssl verifies tls.crt against ca.crt', () => {
    const out = openssl('verify', '-CAfile', first.caFile, first.certFile);
    assert.match(out, /tls\.crt: OK/);
  });

  it('has the expected subject, issuer, SANs, usages and algorithms (openssl x509 -text)', () => {
    const text = openssl('x509', '-in', first.certFile, '-noout', '-text');
    assert.match(text, new RegExp(`Subject: CN ?= ?${SERVING_COMMON_NAME.replace(/\./g, '\\.')}`));
    assert.match(text, new RegExp(`Issuer: CN ?= ?${CA_COMMON_NAME}`));
    assert.match(text, /ecdsa-with-SHA256/);
    assert.match(text, /prime256v1|P-256/);
    assert.match(text, /CA:FALSE/);
    assert.match(text, /TLS Web Server Authentication/);
    const san = /X509v3 Subject Alternative Name:.*\n\s*(.*)\n/.exec(text)?.[1] ?? '';
    for (const want of [
      'DNS:localhost',
      'DNS:farm-apiserver.farm-system.svc',
      'DNS:farm-apiserver.farm-system.svc.cluster.local',
      'IP Address:127.0.0.1',
      'IP Address:0:0:0:0:0:0:0:1',
    ]) {
      assert.ok(san.includes(want), `SANs ${JSON.stringify(san)} miss ${want}`);
    }
    const caText = openssl('x509', '-in', first.caFile, '-noout', '-text');
    assert.match(caText, /CA:TRUE/);
    assert.match(caText, /Certificate Sign/);
    assert.match(caText, new RegExp(`Subject: CN ?= ?${CA_COMMON_NAME}`));
  });

  it('validity is about 1 year (serving) and 10 years (CA); keys match certs', async () => {
    const srv = new X509Certificate(await readFile(first.certFile));
    const ca = new X509Certificate(await readFile(first.caFile));
    const srvDays = (Date.parse(srv.validTo) - Date.now()) / DAY;
    const caDays = (Date.parse(ca.validTo) - Date.now()) / DAY;
    assert.ok(srvDays > 364 && srvDays < 366, `serving cert valid for ${srvDays} days`);
    assert.ok(caDays > 3649 && caDays < 3651, `CA valid for ${caDays} days`);
    assert.ok(Date.parse(srv.validFrom) < Date.now());
    assert.ok(srv.checkIssued(ca));
    assert.ok(srv.checkPrivateKey(createPrivateKey(await readFile(first.keyFile))));
    assert.ok(ca.checkPrivateKey(createPrivateKey(await readFile(join(dir, 'ca.key')))));
    assert.equal(srv.checkHost('farm-apiserver.farm-system.svc.cluster.local'), 'farm-apiserver.farm-system.svc.cluster.local');
    assert.equal(srv.checkIP('::1'), '::1');
    assert.equal(srv.checkIP('127.0.0.1'), '127.0.0.1');
  });

  it('a TLS client trusting only ca.crt accepts the serving cert for localhost', async () => {
    const server = createServer(
      { cert: await readFile(first.certFile), key: await readFile(first.keyFile) },
      (_req, res) => res.end('ok'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const ca = await readFile(first.caFile);
      for (const servername of ['localhost', 'farm-apiserver.farm-system.svc']) {
        const authorized = await new Promise<boolean>((resolve, reject) => {
          const s = connect({ host: '127.0.0.1', port, servername, ca }, () => {
            resolve(s.authorized);
            s.destroy();
          });
          s.on('error', reject);
        });
        assert.equal(authorized, true, servername);
      }
    } finally {
      server.close();
    }
  });

  it('signs a new serving cert with an existing CA when only the serving pair is missing', async () => {
    const d = join(root, 'reuse-ca');
    const orig = await ensureDevCerts(d);
    const caBefore = await readFile(orig.caFile, 'utf8');
    const certBefore = await readFile(orig.certFile, 'utf8');
    await unlink(orig.certFile);
    await unlink(orig.keyFile);
    const again = await ensureDevCerts(d);
    assert.equal(again.created, true);
    assert.equal(await readFile(again.caFile, 'utf8'), caBefore);
    assert.notEqual(await readFile(again.certFile, 'utf8'), certBefore);
    assert.match(openssl('verify', '-CAfile', again.caFile, again.certFile), /OK/);
  });

  it('refuses an incomplete set instead of overwriting anything', async () => {
    const d = join(root, 'partial');
    const c = await ensureDevCerts(d);
    await unlink(c.keyFile);
    const certBefore = await stat(c.certFile);
    await assert.rejects(ensureDevCerts(d), (e: Error) => {
      assert.match(e.message, /incomplete dev certificates/);
      assert.match(e.message, /not tls\.key/);
      return true;
    });
    assert.equal((await stat(c.certFile)).mtimeMs, certBefore.mtimeMs);

    const d2 = join(root, 'only-tls');
    await mkdir(d2);
    await writeFile(join(d2, 'tls.crt'), 'x');
    await assert.rejects(ensureDevCerts(d2), /found tls\.crt but not ca\.crt, ca\.key, tls\.key/);
    assert.equal(await readFile(join(d2, 'tls.crt'), 'utf8'), 'x');
  });
});

describe('tokens', () => {
  it('generateToken is 32 random bytes, base64url', () => {
    const a = generateToken();
    const b = generateToken();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(a, 'base64url').length, 32);
    assert.notEqual(a, b);
  });

  it('ensureToken creates <dir>/token 0600 once, then reads it', async () => {
    const d = join(root, 'tok');
    const t1 = await ensureToken(d);
    assert.match(t1, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(await mode(join(d, 'token')), 0o600);
    const m = (await stat(join(d, 'token'))).mtimeMs;
    assert.equal(await ensureToken(d), t1);
    assert.equal((await stat(join(d, 'token'))).mtimeMs, m);
  });

  it('ensureToken reads a user-provided token and rejects an empty file', async () => {
    const d = join(root, 'tok2');
    await mkdir(d);
    await writeFile(join(d, 'token'), 'my-token\n');
    assert.equal(await ensureToken(d), 'my-token');
    await writeFile(join(d, 'token'), '\n');
    await assert.rejects(ensureToken(d), /is empty/);
  });
});

describe('the cert dir and token are named when unusable', () => {
  it('a --cert-dir that is a file is ENOTDIR for certificates and token alike', async () => {
    const file = join(root, 'not-a-dir');
    await writeFile(file, 'x');
    await assert.rejects(ensureDevCerts(file), { code: 'ENOTDIR', path: file });
    await assert.rejects(ensureToken(file), { code: 'ENOTDIR', path: file });
  });

  it('a token that is a directory names <dir>/token', async () => {
    const d = join(root, 'tok-dir');
    await mkdir(join(d, 'token'), { recursive: true });
    await assert.rejects(ensureToken(d), { code: 'EISDIR', path: join(d, 'token') });
  });
});

describe('checkServingPair', () => {
  const names = { certFile: '/c/tls.crt', keyFile: '/k/tls.key' };
  let good: ServingCertPem;
  let other: ServingCertPem;
  before(async () => {
    for (const cn of ['good', 'other']) {
      const g = await generate([{ name: 'commonName', value: cn }], { keyType: 'ec', algorithm: 'sha256' });
      if (cn === 'good') good = { cert: g.cert, key: g.private };
      else other = { cert: g.cert, key: g.private };
    }
  });

  it('accepts a matching pair, also with a chain after the certificate', () => {
    checkServingPair(good, names);
    checkServingPair({ cert: `${good.cert}\n${other.cert}`, key: good.key }, names);
  });

  it('refuses every unusable pair in one line naming the file at fault', () => {
    const rsa = openssl('genrsa', '2048');
    const encrypted = createPrivateKey(good.key).export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' }).toString();
    const cases: Array<[string, ServingCertPem, RegExp]> = [
      ['both empty (TLS itself accepts this)', { cert: '', key: '' }, /^\/c\/tls\.crt holds no PEM certificate$/],
      ['empty key', { cert: good.cert, key: '' }, /^\/k\/tls\.key holds no PEM private key$/],
      ['garbage certificate', { cert: 'not a certificate', key: good.key }, /^\/c\/tls\.crt holds no PEM certificate$/],
      ['truncated certificate', { cert: good.cert.slice(0, 80), key: good.key }, /^\/c\/tls\.crt holds a PEM certificate that does not parse$/],
      ['the key as certificate', { cert: good.key, key: good.key }, /^\/c\/tls\.crt holds a private key, not a certificate$/],
      ['the certificate as key', { cert: good.cert, key: good.cert }, /^\/k\/tls\.key holds a certificate, not a private key$/],
      ['truncated key', { cert: good.cert, key: good.key.replace(/\n[A-Za-z0-9+/=]+\n/, '\nAAAA\n') }, /^\/k\/tls\.key holds a PEM private key that does not parse$/],
      ['another certificate\'s key', { cert: good.cert, key: other.key }, /^\/k\/tls\.key is not the key of the certificate in \/c\/tls\.crt$/],
      ['an RSA key for an EC certificate', { cert: good.cert, key: rsa }, /^\/k\/tls\.key is not the key of the certificate in \/c\/tls\.crt$/],
      ['an encrypted key', { cert: good.cert, key: encrypted }, /^\/k\/tls\.key is encrypted/],
    ];
    for (const [what, pem, message] of cases) {
      assert.throws(() => checkServingPair(pem, names), (e: unknown) => {
        assert.ok(e instanceof Error, what);
        assert.match(e.message, message, what);
        assert.ok(!e.message.includes('\n'), what);
        return true;
      }, what);
    }
  });
});

describe('writeKubeconfig', () => {
  it('writes a parseable kubeconfig with CA data, token and current context (0600)', async () => {
    const certs = await ensureDevCerts(join(root, 'kc-certs'));
    const caPem = await readFile(certs.caFile, 'utf8');
    const path = join(root, 'kc', 'sub', 'kubeconfig');
    await writeKubeconfig(path, { server: 'https://127.0.0.1:8443', caPem, token: 'tok123', namespace: 'farm' });
    assert.equal(await mode(path), 0o600);

    const doc = parse(await readFile(path, 'utf8'));
    assert.equal(doc.apiVersion, 'v1');
    assert.equal(doc.kind, 'Config');
    assert.equal(doc['current-context'], 'farm-apiserver');
    assert.equal(doc.clusters[0].name, 'farm-apiserver');
    assert.equal(doc.clusters[0].cluster.server, 'https://127.0.0.1:8443');
    assert.equal(Buffer.from(doc.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), caPem);
    assert.deepEqual(doc.users, [{ name: 'farm-apiserver', user: { token: 'tok123' } }]);
    assert.deepEqual(doc.contexts, [
      { name: 'farm-apiserver', context: { cluster: 'farm-apiserver', user: 'farm-apiserver', namespace: 'farm' } },
    ]);

    // @kubernetes/client-node understands it too
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    assert.equal(kc.getCurrentContext(), 'farm-apiserver');
    assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:8443');
    assert.equal(kc.getCurrentUser()?.token, 'tok123');
    const opts: { headers?: Record<string, string>; ca?: Buffer | string } = {};
    await kc.applyToHTTPSOptions(opts);
    assert.equal(opts.headers?.Authorization, 'Bearer tok123');
    assert.equal(opts.ca?.toString(), caPem);

    // overwriting with a different context name and no namespace
    await writeKubeconfig(path, { server: 'https://localhost:9443', caPem, token: 't2', contextName: 'dev' });
    const doc2 = parse(await readFile(path, 'utf8'));
    assert.equal(doc2['current-context'], 'dev');
    assert.deepEqual(doc2.contexts, [{ name: 'dev', context: { cluster: 'dev', user: 'dev' } }]);
    assert.equal(doc2.clusters[0].cluster.server, 'https://localhost:9443');
    assert.equal(await mode(path), 0o600);
  });

  it('rejects bad input without writing', async () => {
    const caPem = await readFile(join(root, 'kc-certs', 'ca.crt'), 'utf8');
    const path = join(root, 'kc-bad');
    await assert.rejects(writeKubeconfig(path, { server: 'http://x', caPem, token: 't' }), /must be https/);
    await assert.rejects(writeKubeconfig(path, { server: 'nope', caPem, token: 't' }), /invalid server URL/);
    await assert.rejects(writeKubeconfig(path, { server: 'https://x', caPem: 'junk', token: 't' }), /not a PEM/);
    await assert.rejects(writeKubeconfig(path, { server: 'https://x', caPem, token: '' }), /token/);
    await assert.rejects(stat(path), { code: 'ENOENT' });
  });
});

describe('watchServingCert', () => {
  const pairs: Record<string, ServingCertPem> = {};
  let server: Server;
  let port: number;

  before(async () => {
    for (const cn of ['cert-a', 'cert-b', 'cert-c', 'cert-d', 'cert-e', 'cert-f', 'cert-g']) {
      const g = await generate([{ name: 'commonName', value: cn }], { keyType: 'ec', algorithm: 'sha256' });
      pairs[cn] = { cert: g.cert, key: g.private };
    }
  });

  async function startServer(pem: ServingCertPem): Promise<void> {
    server = createServer({ cert: pem.cert, key: pem.key }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  }

  async function stopServer(): Promise<void> {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }

  /** Subject CN presented by the server on a fresh TLS connection. */
  function servedCN(): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        const cn = s.getPeerCertificate().subject.CN;
        s.destroy();
        resolve(Array.isArray(cn) ? cn.join(",") : (cn ?? ""));
      });
      s.on('error', reject);
    });
  }

  async function writePair(dir: string, pem: ServingCertPem): Promise<void> {
    await writeFile(join(dir, 'tls.crt'), pem.cert);
    await writeFile(join(dir, 'tls.key'), pem.key);
  }

  it('switches the served certificate without restarting (in-place, rename, bad pair, stop)', async () => {
    const dir = join(root, 'reload');
    await mkdir(dir);
    await writePair(dir, pairs['cert-a']!);
    await startServer(pairs['cert-a']!);
    const applied: string[] = [];
    const errors: Error[] = [];
    const stop = watchServingCert(
      { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
      (pem) => {
        applied.push(new X509Certificate(pem.cert).subject);
        server.setSecureContext({ cert: pem.cert, key: pem.key });
      },
      (e) => errors.push(e),
      { pollIntervalMs: 0 }, // prove fs.watch does it
    );
    try {
      assert.equal(await servedCN(), 'cert-a');

      // 1. overwrite both files in place
      await writePair(dir, pairs['cert-b']!);
      await waitFor(async () => (await servedCN()) === 'cert-b', 'cert-b after in-place write');
      assert.deepEqual(applied, ['CN=cert-b']);

      // 2. atomic replacement by rename (new inodes)
      await writeFile(join(dir, '.tls.crt.new'), pairs['cert-c']!.cert);
      await writeFile(join(dir, '.tls.key.new'), pairs['cert-c']!.key);
      await rename(join(dir, '.tls.key.new'), join(dir, 'tls.key'));
      await rename(join(dir, '.tls.crt.new'), join(dir, 'tls.crt'));
      await waitFor(async () => (await servedCN()) === 'cert-c', 'cert-c after rename');

      // 3. rewriting identical content does not re-apply
      const n = applied.length;
      await writePair(dir, pairs['cert-c']!);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(applied.length, n);

      // 4. mismatched pair: error reported, old certificate kept
      const before4 = errors.length;
      await writeFile(join(dir, 'tls.crt'), pairs['cert-d']!.cert); // key is still cert-c's
      await waitFor(() => errors.length > before4, 'an error for the mismatched pair');
      assert.match(errors.at(-1)!.message, /serving certificate reload .*: .*tls\.key is not the key of the certificate in .*tls\.crt$/);
      assert.ok(!errors.at(-1)!.message.includes('\n'));
      assert.equal(await servedCN(), 'cert-c');

      // ... and recovery once the matching key arrives
      await writeFile(join(dir, 'tls.key'), pairs['cert-d']!.key);
      await waitFor(async () => (await servedCN()) === 'cert-d', 'cert-d after fixing the key');

      // 5. garbage PEM is rejected too
      const errs = errors.length;
      await writeFile(join(dir, 'tls.crt'), 'not a certificate');
      await waitFor(() => errors.length > errs, 'an error for garbage PEM');
      assert.equal(await servedCN(), 'cert-d');
      // 5b. an empty file (half-way through a copy) is refused: TLS would accept it and serve nothing
      const errsEmpty = errors.length;
      await writeFile(join(dir, 'tls.crt'), '');
      await waitFor(() => errors.length > errsEmpty, 'an error for an empty certificate');
      assert.match(errors.at(-1)!.message, /tls\.crt holds no PEM certificate$/);
      assert.equal(await servedCN(), 'cert-d');
      await writeFile(join(dir, 'tls.crt'), pairs['cert-d']!.cert);
      await new Promise((r) => setTimeout(r, 400));
    } finally {
      stop();
    }

    // 6. after stop(), changes are ignored
    const count = applied.length;
    await writePair(dir, pairs['cert-e']!);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(applied.length, count);
    assert.equal(await servedCN(), 'cert-d');
    await stopServer();
  });

  it('follows a Kubernetes secret volume update (..data symlink swap)', async () => {
    const dir = join(root, 'secret-vol');
    await mkdir(join(dir, '..v1'), { recursive: true });
    await writePair(join(dir, '..v1'), pairs['cert-e']!);
    await symlink('..v1', join(dir, '..data'));
    await symlink('..data/tls.crt', join(dir, 'tls.crt'));
    await symlink('..data/tls.key', join(dir, 'tls.key'));
    await startServer(pairs['cert-e']!);
    const errors: Error[] = [];
    const stop = watchServingCert(
      { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
      (pem) => server.setSecureContext(pem),
      (e) => errors.push(e),
      { pollIntervalMs: 0 },
    );
    try {
      assert.equal(await servedCN(), 'cert-e');
      // what kubelet's AtomicWriter does: new timestamped dir, new ..data_tmp symlink, rename over ..data
      await mkdir(join(dir, '..v2'));
      await writePair(join(dir, '..v2'), pairs['cert-f']!);
      await symlink('..v2', join(dir, '..data_tmp'));
      await rename(join(dir, '..data_tmp'), join(dir, '..data'));
      await rm(join(dir, '..v1'), { recursive: true });
      await waitFor(async () => (await servedCN()) === 'cert-f', 'cert-f after symlink swap');
      assert.deepEqual(errors, []);
    } finally {
      stop();
      await stopServer();
    }
  });

  it('polling picks up changes when filesystem events are missed', async () => {
    const dir = join(root, 'poll');
    await mkdir(dir);
    await writePair(dir, pairs['cert-f']!);
    const applied: string[] = [];
    const errors: Error[] = [];
    // A huge debounce means fs.watch-triggered reloads never fire within the test; only the poll can apply.
    const stop = watchServingCert(
      { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
      (pem) => applied.push(new X509Certificate(pem.cert).subject),
      (e) => errors.push(e),
      { debounceMs: 60_000, pollIntervalMs: 100 },
    );
    try {
      await writePair(dir, pairs['cert-g']!);
      await waitFor(() => applied.length === 1, 'the poll to apply cert-g');
      assert.deepEqual(applied, ['CN=cert-g']);
      assert.deepEqual(errors, []);
    } finally {
      stop();
    }
  });
});
