// Start-up failures of the real process, as a class: every failure before the server is ready exits 1
// (2 for a bad flag) with ONE stderr line "farm-apiserver: <what failed>: <why>" naming the path, flag
// or port, and no stack frame unless --log-level debug. A cert dir that already holds everything starts
// even when it is really read-only (as root: chattr +i, since root ignores permission bits), and
// `npm run -s manifests` works before any start.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { chmod, chown, cp, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureDevCerts } from '../../src/certs/devCerts.js';
import { freePort } from '../cluster/controlPlane.js';

const ROOT = resolve(import.meta.dirname, '../..');
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
let dir: string;
/** A cert dir as one start leaves it (certificates, token, kubeconfig), and the port it served on. */
let template: string;
let templatePort: number;
/** Directories made immutable; made mutable again before the temp dir is removed. */
const immutable: string[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'farm-startup-'));
  await chmod(dir, 0o755); // an unprivileged child (see unwritable, EACCES) must reach its cert dir
  templatePort = await freePort();
  template = join(dir, 'template');
  const first = await run('src/main.ts', ['--port', String(templatePort), '--cert-dir', template], { until: serving });
  assert.match(first.stdout, serving, first.stderr);
});
after(async () => {
  for (const d of immutable) execFileSync('chattr', ['-i', d]);
  await rm(dir, { recursive: true, force: true });
});

const serving = /is serving on/;

interface Run { code: number | null; stdout: string; stderr: string }
interface RunOptions { until?: RegExp; timeoutMs?: number; uid?: number }

/**
 * Runs a script of the project until it exits, or until `until` (default: that it serves) matches
 * its stdout, then SIGTERM: a start that should have failed ends at once, not at the timeout.
 */
function run(script: string, args: string[], opts: RunOptions = {}, cwd = ROOT): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const ids = opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.uid };
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'], ...ids,
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`)); }, opts.timeoutMs ?? 30_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      if ((opts.until ?? serving).test(stdout)) child.kill('SIGTERM');
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('exit', (code) => { clearTimeout(timer); resolveRun({ code, stdout, stderr }); });
  });
}

const server = async (args: string[], opts: RunOptions = {}) => run('src/main.ts', ['--port', String(await freePort()), ...args], opts);

/** The class property: the exit code, exactly one stderr line, no stack frame, and it names the culprit. */
function expectOneLine(r: Run, names: string | RegExp, code = 1, prefix = 'farm-apiserver: '): void {
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(r.code, code, `exit code ${r.code}: ${r.stderr}${r.stdout}`);
  assert.equal(lines.length, 1, r.stderr);
  assert.ok(lines[0]!.startsWith(prefix), lines[0]);
  assert.doesNotMatch(`${r.stderr}\n${r.stdout}`, /^\s+at /m);
  assert.doesNotMatch(r.stdout, serving); // it never got as far as serving
  if (typeof names === 'string') assert.ok(lines[0]!.includes(names), `${lines[0]} should name ${names}`);
  else assert.match(lines[0]!, names);
}

/** A cert dir holding everything a start leaves there (its kubeconfig names templatePort). */
async function startedOnce(name: string): Promise<string> {
  const d = join(dir, name);
  await cp(template, d, { recursive: true });
  return d;
}

/**
 * Makes `d` really unwritable and proves it with a create that must fail. Root ignores permission
 * bits, so as root `d` is made immutable (chattr +i); should that be impossible, `d` is handed to
 * nobody with mode 0555 and the process under test must run as nobody (the returned uid).
 */
async function unwritable(d: string): Promise<{ uid?: number; how: string }> {
  let made: { uid?: number; how: string };
  if (!isRoot) {
    await chmod(d, 0o555);
    made = { how: 'chmod 0555' };
  } else {
    try {
      execFileSync('chattr', ['+i', d], { stdio: 'pipe' });
      immutable.push(d);
      made = { how: 'chattr +i, as root' };
    } catch {
      for (const f of await readdir(d)) await chown(join(d, f), NOBODY, NOBODY);
      await chown(d, NOBODY, NOBODY);
      await chmod(d, 0o555);
      made = { uid: NOBODY, how: 'owned by nobody, mode 0555, run as nobody' };
    }
  }
  const probe = join(d, 'probe');
  const ids = made.uid === undefined ? {} : { uid: made.uid, gid: made.uid };
  assert.throws(() => execFileSync(process.execPath, ['-e', `require('node:fs').writeFileSync(${JSON.stringify(probe)}, '')`], { stdio: 'pipe', ...ids }),
    `${d} is still writable (${made.how}): this test would prove nothing`);
  return made;
}

const mtimes = async (d: string) => Object.fromEntries(await Promise.all((await readdir(d)).map(async (f) => [f, (await stat(join(d, f))).mtimeMs] as const)));

describe('start-up failures are one line', () => {
  it('listen: the port is in use, the address is not on this machine', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const certs = join(dir, 'listen');
      expectOneLine(await run('src/main.ts', ['--port', String(port), '--cert-dir', certs]), `cannot listen on 127.0.0.1:${port}: address already in use`);
      // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of this machine.
      const other = await freePort();
      expectOneLine(await run('src/main.ts', ['--port', String(other), '--bind-address', '192.0.2.1', '--cert-dir', certs]),
        `cannot listen on 192.0.2.1:${other}: address not available on this machine`);
    } finally {
      busy.close();
    }
  });

  it('listen: a privileged port without the privilege (EACCES)', async (t) => {
    const unprivilegedFrom = Number((await readFile('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').catch(() => '1024')).trim());
    if (unprivilegedFrom <= 1) return t.skip('every port is unprivileged on this machine (net.ipv4.ip_unprivileged_port_start <= 1)');
    // Root may bind any port: the server then runs as nobody, with a cert dir of its own.
    const certs = join(dir, 'eacces');
    await mkdir(certs);
    if (isRoot) await chown(certs, NOBODY, NOBODY);
    const port = unprivilegedFrom - 1;
    expectOneLine(await run('src/main.ts', ['--port', String(port), '--cert-dir', certs], isRoot ? { uid: NOBODY } : {}),
      `cannot listen on 127.0.0.1:${port}: permission denied`);
  });

  it('--cert-dir is a file, or below one (for the certificates and for the token)', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const good = await startedOnce('for-explicit');
    const explicit = ['--tls-cert-file', join(good, 'tls.crt'), '--tls-key-file', join(good, 'tls.key')];
    const runs = await Promise.all([
      server(['--cert-dir', file]),
      server(['--cert-dir', join(file, 'sub')]),
      server(['--cert-dir', file, ...explicit]),
    ]);
    expectOneLine(runs[0]!, `cannot prepare the certificates in --cert-dir ${file}: not a directory`);
    expectOneLine(runs[1]!, `cannot prepare the certificates in --cert-dir ${join(file, 'sub')}: not a directory`);
    expectOneLine(runs[2]!, `cannot prepare the access token in --cert-dir ${file}: not a directory`);
  });

  it('unusable serving certificate or key: missing, empty, garbage, swapped, mismatched, encrypted, incomplete set', async () => {
    const d = join(dir, 'bad-certs');
    await mkdir(d);
    const one = await startedOnce('one');
    const two = join(dir, 'two');
    await ensureDevCerts(two); // another key
    const crt = join(one, 'tls.crt');
    const key = join(one, 'tls.key');
    const files: Record<string, string> = {
      'empty.pem': '', 'garbage.pem': 'not a certificate\n',
      'encrypted.key': execFileSync('openssl', ['pkcs8', '-topk8', '-in', key, '-passout', 'pass:x'], { encoding: 'utf8' }),
    };
    for (const [name, text] of Object.entries(files)) await writeFile(join(d, name), text);
    const partial = join(dir, 'partial');
    await mkdir(partial);
    await cp(join(one, 'ca.crt'), join(partial, 'ca.crt'));
    const cases: Array<[string[], string]> = [
      [['--tls-cert-file', join(d, 'none.crt'), '--tls-key-file', key], `cannot read the serving certificate ${join(d, 'none.crt')}: no such file or directory`],
      [['--tls-cert-file', crt, '--tls-key-file', join(d, 'none.key')], `cannot read the serving key ${join(d, 'none.key')}: no such file or directory`],
      [['--tls-cert-file', d, '--tls-key-file', key], `cannot read the serving certificate ${d}: is a directory`],
      [['--tls-cert-file', join(d, 'empty.pem'), '--tls-key-file', join(d, 'empty.pem')], `cannot use the serving certificate and key: ${join(d, 'empty.pem')} holds no PEM certificate`],
      [['--tls-cert-file', join(d, 'garbage.pem'), '--tls-key-file', key], `cannot use the serving certificate and key: ${join(d, 'garbage.pem')} holds no PEM certificate`],
      [['--tls-cert-file', crt, '--tls-key-file', join(d, 'garbage.pem')], `cannot use the serving certificate and key: ${join(d, 'garbage.pem')} holds no PEM private key`],
      [['--tls-cert-file', key, '--tls-key-file', crt], `cannot use the serving certificate and key: ${key} holds a private key, not a certificate`],
      [['--tls-cert-file', crt, '--tls-key-file', join(two, 'tls.key')], `cannot use the serving certificate and key: ${join(two, 'tls.key')} is not the key of the certificate in ${crt}`],
      [['--tls-cert-file', crt, '--tls-key-file', join(d, 'encrypted.key')], `cannot use the serving certificate and key: ${join(d, 'encrypted.key')} is encrypted`],
      [['--cert-dir', partial], `cannot prepare the certificates in --cert-dir ${partial}: incomplete dev certificates in ${partial}: found ca.crt but not ca.key, tls.crt, tls.key`],
    ];
    const runs = await Promise.all(cases.map(([args]) => server(['--cert-dir', join(dir, 'bad-certs-token'), ...args])));
    for (const [i, [, names]] of cases.entries()) expectOneLine(runs[i]!, names);
  });

  it('--kubeconfig: missing, garbage, no current cluster, a server that is no URL, an unreadable credential file', async () => {
    const d = join(dir, 'kubeconfigs');
    await mkdir(d);
    const kubeconfig = (cluster: string, user: string) =>
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {${cluster}}}]\nusers: [{name: u, user: {${user}}}]\n` +
      'contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n';
    const files: Record<string, string> = {
      garbage: 'clusters: [',
      'no-context': 'apiVersion: v1\nkind: Config\n',
      'no-url': kubeconfig('server: "not a url"', 'token: abc'),
      'no-ca': kubeconfig(`server: "https://127.0.0.1:1", certificate-authority: ${join(d, 'missing-ca.crt')}`, 'token: abc'),
    };
    for (const [name, text] of Object.entries(files)) await writeFile(join(d, name), text);
    const cases: Array<[string, string]> = [
      [join(d, 'missing'), 'no such file or directory'],
      [join(d, 'garbage'), ''],
      [join(d, 'no-context'), 'the kubeconfig has no current cluster'],
      [join(d, 'no-url'), 'the server of cluster "c" is not an http(s) URL: "not a url"'],
      [join(d, 'no-ca'), `${join(d, 'missing-ca.crt')}: no such file or directory`],
    ];
    const certs = await startedOnce('kubeconfig-certs'); // made once: parallel starts would race to make them
    const runs = await Promise.all(cases.map(([file]) => server(['--kubeconfig', file, '--cert-dir', certs])));
    for (const [i, [file, why]] of cases.entries()) expectOneLine(runs[i]!, `cannot load --kubeconfig ${file}: ${why}`);
    // Standalone with Pods from a cluster loads it the same way.
    const [file, why] = cases[4]!;
    expectOneLine(await server(['--standalone', '--kubeconfig', file, '--cert-dir', certs]), `cannot load --kubeconfig ${file}: ${why}`);
  });

  it('the token: a directory, an empty file', async () => {
    const dirToken = await startedOnce('token-dir');
    await rm(join(dirToken, 'token'));
    await mkdir(join(dirToken, 'token'));
    const emptyToken = await startedOnce('token-empty');
    await writeFile(join(emptyToken, 'token'), '\n');
    const [a, b] = await Promise.all([server(['--cert-dir', dirToken]), server(['--cert-dir', emptyToken])]);
    expectOneLine(a!, `cannot prepare the access token in --cert-dir ${dirToken}: ${join(dirToken, 'token')}: is a directory`);
    expectOneLine(b!, `cannot prepare the access token in --cert-dir ${emptyToken}: token file ${join(emptyToken, 'token')} is empty`);
  });

  it('a read-only cert dir that lacks what it needs: empty, or certificates without a token', async (t) => {
    const empty = join(dir, 'ro-empty');
    await mkdir(empty);
    const emptyRo = await unwritable(empty);
    const noToken = await startedOnce('ro-no-token');
    await rm(join(noToken, 'token'));
    const noTokenRo = await unwritable(noToken);
    t.diagnostic(`read-only by ${emptyRo.how}`);
    const denied = '(permission denied|operation not permitted)';
    expectOneLine(await server(['--cert-dir', empty], { uid: emptyRo.uid }),
      new RegExp(`^farm-apiserver: cannot prepare the certificates in --cert-dir ${empty}: ${empty}/ca.key: ${denied}$`));
    expectOneLine(await server(['--cert-dir', noToken], { uid: noTokenRo.uid }),
      new RegExp(`^farm-apiserver: cannot prepare the access token in --cert-dir ${noToken}: ${noToken}/token: ${denied}$`));
  });

  it('a bad flag is exit 2, also one line', async () => {
    expectOneLine(await run('src/main.ts', ['--port', '99999']), '--port', 2);
  });

  it('--log-level debug adds the stack', async () => {
    const r = await server(['--tls-cert-file', join(dir, 'nope.crt'), '--tls-key-file', join(dir, 'nope.key'), '--log-level', 'debug', '--cert-dir', join(dir, 'debug')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^farm-apiserver: cannot read the serving certificate .*nope\.crt: no such file or directory\n/);
    assert.match(r.stderr, /^\s+at /m);
  });
});

describe('a cert dir that holds everything', () => {
  it('starts from a really read-only dir without rewriting anything', async (t) => {
    const port = templatePort;
    const certs = await startedOnce('mounted');
    const before = await mtimes(certs);
    const ro = await unwritable(certs);
    t.diagnostic(`read-only by ${ro.how}`);
    // Same port: the kubeconfig already says the same, so it is left as it is, without a warning.
    const again = await run('src/main.ts', ['--port', String(port), '--cert-dir', certs], { until: serving, uid: ro.uid });
    assert.match(again.stdout, serving, again.stderr);
    assert.doesNotMatch(again.stdout, /cannot write/);
    assert.equal(again.stderr, '');
    // Another port: the kubeconfig would change but cannot; a warning naming it, and it serves anyway.
    const other = await run('src/main.ts', ['--port', String(await freePort()), '--cert-dir', certs], { until: serving, uid: ro.uid });
    assert.match(other.stdout, serving, other.stderr);
    assert.match(other.stdout, new RegExp(`"level":40,.*"msg":"cannot write ${join(certs, 'kubeconfig')}: (permission denied|operation not permitted);`));
    assert.doesNotMatch(other.stdout, /\.tmp-/);
    assert.equal(other.stderr, '');
    assert.deepEqual(await mtimes(certs), before);
  });

  it('a kubeconfig that cannot be written (a directory in its place) only warns', async () => {
    const other = join(dir, 'kubeconfig-blocked');
    await mkdir(join(other, 'kubeconfig'), { recursive: true });
    const blocked = await server(['--cert-dir', other], { until: serving });
    assert.match(blocked.stdout, new RegExp(`cannot write ${join(other, 'kubeconfig')}: `));
    assert.match(blocked.stdout, serving);
  });
});

describe('npm run -s manifests', () => {
  it('before any start: generates the dev certificates npm start then uses', async () => {
    const certs = join(dir, 'fresh');
    const r = await run('scripts/manifests.ts', ['--cert-dir', certs]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const ca = await readFile(join(certs, 'ca.crt'), 'utf8');
    assert.match(r.stdout, new RegExp(`caBundle: ${Buffer.from(ca).toString('base64')}`));
    assert.match(r.stdout, /kind: Secret/);
    const before = await mtimes(certs);
    const started = await server(['--cert-dir', certs], { until: serving });
    assert.match(started.stdout, serving, started.stderr);
    const after = await mtimes(certs);
    for (const f of ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']) assert.equal(after[f], before[f], `${f} rewritten by npm start`);
  });

  it('from a read-only dir: renders what it holds; nothing there is one line', async () => {
    const full = await startedOnce('manifests-ro');
    const fullRo = await unwritable(full);
    const ok = await run('scripts/manifests.ts', ['--cert-dir', full], { uid: fullRo.uid });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /kind: APIService/);
    const empty = join(dir, 'manifests-ro-empty');
    await mkdir(empty);
    const emptyRo = await unwritable(empty);
    expectOneLine(await run('scripts/manifests.ts', ['--cert-dir', empty], { uid: emptyRo.uid }),
      new RegExp(`^manifests: cannot prepare the certificates in --cert-dir ${empty}: ${empty}/ca.key: (permission denied|operation not permitted)$`), 1, 'manifests: ');
  });

  it('a bad --cert-dir is one line, exit 1; a bad command line is one line, exit 2', async () => {
    const file = join(dir, 'manifests-file');
    await writeFile(file, 'x');
    const certs = join(dir, 'manifests-flags');
    const [bad, unknown, noValue, badPort] = await Promise.all([
      run('scripts/manifests.ts', ['--cert-dir', join(file, 'x')]),
      run('scripts/manifests.ts', ['--cert-dri', certs]),
      run('scripts/manifests.ts', ['--cert-dir']),
      run('scripts/manifests.ts', ['--cert-dir', certs, '--local-port', 'eighty']),
    ]);
    expectOneLine(bad!, `manifests: cannot prepare the certificates in --cert-dir ${join(file, 'x')}: not a directory`, 1, 'manifests: ');
    expectOneLine(unknown!, 'unknown argument "--cert-dri"', 2, 'manifests: ');
    expectOneLine(noValue!, '--cert-dir needs a value', 2, 'manifests: ');
    expectOneLine(badPort!, '--local-port must be a port number (1-65535), got "eighty"', 2, 'manifests: ');
  });

  it('app.yaml missing or broken is one line naming it', async () => {
    // A copy of the project's scripts and sources, so app.yaml can go missing without touching the tree.
    const copy = join(dir, 'project-copy');
    await mkdir(copy);
    for (const p of ['scripts', 'src', 'package.json', 'tsconfig.json']) await cp(join(ROOT, p), join(copy, p), { recursive: true });
    await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    const certs = join(dir, 'manifests-copy-certs');
    const missing = await run('scripts/manifests.ts', ['--cert-dir', certs], {}, copy);
    expectOneLine(missing, `manifests: cannot render the manifests: ${join(copy, 'app.yaml')}: no such file or directory`, 1, 'manifests: ');
    await writeFile(join(copy, 'app.yaml'), 'kind: Namespace\nmetadata: {name: [\n');
    const broken = await run('scripts/manifests.ts', ['--cert-dir', certs], {}, copy);
    expectOneLine(broken, `manifests: cannot render the manifests: ${join(copy, 'app.yaml')}: `, 1, 'manifests: ');
  });
});
