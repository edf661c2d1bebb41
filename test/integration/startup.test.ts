// Start-up failures of the real process: exit 1 and one line naming the problem (stack only at debug);
// a cert dir that already holds everything starts without rewriting it; manifests before any start.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../cluster/controlPlane.js';

const ROOT = resolve(import.meta.dirname, '../..');
let dir: string;

before(async () => { dir = await mkdtemp(join(tmpdir(), 'farm-startup-')); });
after(async () => { await rm(dir, { recursive: true, force: true }); });

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs a script of the project until it exits, or until `until` matches its stdout (then SIGTERM). */
function run(script: string, args: string[], opts: { until?: RegExp; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`)); }, opts.timeoutMs ?? 30_000);
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      if (opts.until?.test(stdout)) child.kill('SIGTERM');
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.on('exit', (code) => { clearTimeout(timer); resolveRun({ code, stdout, stderr }); });
  });
}

const server = async (args: string[]) => run('src/main.ts', ['--port', String(await freePort()), ...args]);

/** The class property: exit 1, exactly one stderr line, no stack frame, and it names the culprit. */
function expectOneLine(r: Run, names: string | RegExp): void {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /^farm-apiserver: /);
  assert.doesNotMatch(r.stderr, /^\s+at /m);
  if (typeof names === 'string') assert.ok(lines[0].includes(names), `${lines[0]} should name ${names}`);
  else assert.match(lines[0], names);
}

describe('start-up failures are one line', () => {
  it('the port is in use', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const r = await run('src/main.ts', ['--port', String(port), '--cert-dir', join(dir, 'busy')]);
      expectOneLine(r, `cannot listen on 127.0.0.1:${port}: address already in use`);
    } finally {
      busy.close();
    }
  });

  it('--cert-dir is a file, or below one', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    expectOneLine(await server(['--cert-dir', file]), new RegExp(`--cert-dir ${file}: it is a file`));
    expectOneLine(await server(['--cert-dir', join(file, 'sub')]), `--cert-dir ${join(file, 'sub')}: not a directory`);
  });

  it('garbage, missing, or mismatched serving certificate and key', async () => {
    const d = join(dir, 'bad-certs');
    await mkdir(d);
    await writeFile(join(d, 'garbage.crt'), 'not a certificate');
    await writeFile(join(d, 'garbage.key'), 'not a key');
    expectOneLine(await server(['--tls-cert-file', join(d, 'garbage.crt'), '--tls-key-file', join(d, 'garbage.key')]), 'are not a usable pair');
    expectOneLine(await server(['--tls-cert-file', join(d, 'none.crt'), '--tls-key-file', join(d, 'none.key')]), `${join(d, 'none.crt')}: no such file or directory`);
    // Two generated sets: the certificate of one with the key of the other.
    const one = join(dir, 'one');
    const two = join(dir, 'two');
    for (const c of [one, two]) assert.equal((await run('scripts/manifests.ts', ['--cert-dir', c])).code, 0);
    expectOneLine(await server(['--tls-cert-file', join(one, 'tls.crt'), '--tls-key-file', join(two, 'tls.key')]), 'are not a usable pair');
  });

  it('a garbage kubeconfig', async () => {
    const kc = join(dir, 'garbage.kubeconfig');
    await writeFile(kc, 'clusters: [');
    expectOneLine(await server(['--kubeconfig', kc, '--cert-dir', join(dir, 'kc-certs')]), `cannot load --kubeconfig ${kc}`);
  });

  it('--log-level debug adds the stack', async () => {
    const r = await server(['--tls-cert-file', join(dir, 'nope.crt'), '--tls-key-file', join(dir, 'nope.key'), '--log-level', 'debug']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^farm-apiserver: cannot read the serving certificate/);
    assert.match(r.stderr, /^\s+at /m);
  });
});

describe('a cert dir that holds everything', () => {
  it('starts again without rewriting anything; an unwritable kubeconfig is a warning, not an exit', async () => {
    const certs = join(dir, 'mounted');
    const port = String(await freePort());
    const first = await run('src/main.ts', ['--port', port, '--cert-dir', certs], { until: /is serving on/ });
    assert.match(first.stdout, /is serving on/);
    const files = ['ca.crt', 'tls.crt', 'tls.key', 'token', 'kubeconfig'];
    const before = await Promise.all(files.map(async (f) => (await stat(join(certs, f))).mtimeMs));
    // Same port: the kubeconfig would say the same, so nothing is written (a read-only Secret mount works).
    const again = await run('src/main.ts', ['--port', port, '--cert-dir', certs], { until: /is serving on/ });
    assert.match(again.stdout, /is serving on/);
    assert.deepEqual(await Promise.all(files.map(async (f) => (await stat(join(certs, f))).mtimeMs)), before);
    // A kubeconfig that cannot be written (here: a directory in its place) only warns.
    const other = join(dir, 'kubeconfig-blocked');
    await mkdir(join(other, 'kubeconfig'), { recursive: true });
    const blocked = await run('src/main.ts', ['--port', String(await freePort()), '--cert-dir', other], { until: /is serving on/ });
    assert.match(blocked.stdout, /cannot write .*kubeconfig/);
    assert.match(blocked.stdout, /is serving on/);
  });
});

describe('npm run -s manifests before any start', () => {
  it('generates the dev certificates and renders; a bad --cert-dir is one line', async () => {
    const certs = join(dir, 'fresh');
    const r = await run('scripts/manifests.ts', ['--cert-dir', certs]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /kind: APIService/);
    assert.ok((await readFile(join(certs, 'ca.crt'), 'utf8')).includes('BEGIN CERTIFICATE'));
    const file = join(dir, 'manifests-file');
    await writeFile(file, 'x');
    const bad = await run('scripts/manifests.ts', ['--cert-dir', join(file, 'x')]);
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /^manifests: cannot prepare the certificates in --cert-dir .*: not a directory/);
  });
});
