// The build's code cache (src/bootstrap.ts reads it when its own directory has none, as in a new pod
// of a rollout, whose emptyDir starts empty): the built entry is started once, standalone (in-memory,
// generated certificates, on loopback), sent the requests a client's first minutes bring, and stopped
// with SIGTERM; the cache its exit leaves is kept beside the bundle as
// `farm-apiserver-<node>-<source>.v8`, once a start has been seen to run it. Made by the Node that
// will run it (the name says which; another Node does not read it).
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './freePort.js';
import { BUNDLE_NAME, isSeedFileName, readCacheFile, seedFileName, sourceKey, thisNode, type NodeIdentity, writeCacheFile } from '../src/bootstrap/codeCacheFiles.js';

const START_TIMEOUT_MS = 60_000;
/** Each warm-up request, and the stop after them. */
const REQUEST_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 15_000;

function nodeIdentity(node: string): NodeIdentity {
  if (node === process.execPath) return thisNode();
  const out = execFileSync(node, ['-p', 'JSON.stringify({ version: process.version, arch: process.arch, v8: process.versions.v8 })'], { encoding: 'utf8' });
  return JSON.parse(out) as NodeIdentity;
}

interface Call {
  method?: string;
  path: string;
  body?: unknown;
  type?: string;
  accept?: string;
  /** Reads at most this long (a watch). */
  forMs?: number;
  /** The status it must get: 2xx unless said. */
  expect?: number;
}

/** One request to the warm-up server; the status (0 when it could not connect) and the body. */
function call(port: number, ca: string, token: string, c: Call): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const body = c.body === undefined ? undefined : JSON.stringify(c.body);
    const headers: Record<string, string> = { accept: c.accept ?? 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
    if (body !== undefined) headers['content-type'] = c.type ?? 'application/json';
    const req = request({ host: '127.0.0.1', port, path: c.path, method: c.method ?? 'GET', ca, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      const done = () => resolve({ status: res.statusCode ?? 0, body: text });
      res.once('end', done);
      res.once('close', done);
      if (c.forMs) setTimeout(() => res.destroy(), c.forMs);
    });
    req.once('error', () => resolve({ status: 0, body: '' }));
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy());
    req.end(body);
  });
}

/** What a start and a client's first requests run: CRUD, patches, server-side apply, tables, a watch, discovery. */
function warmUp(): Call[] {
  const coll = '/apis/farm.example.com/v1alpha/namespaces/default/llamas';
  const llama = (name: string, weight: number) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels: { farm: 'seed' } }, spec: { weight, height: 1.7 } });
  return [
    { path: '/livez' }, { path: '/apis' }, { path: '/apis/farm.example.com/v1alpha' }, { path: '/openapi/v3' },
    { path: '/openapi/v3/apis/farm.example.com/v1alpha' }, { path: '/openapi/v2', accept: 'application/json' },
    { method: 'POST', path: coll, body: llama('seed', 100) },
    { path: `${coll}/seed` }, { path: `${coll}?limit=500` }, { path: `${coll}?labelSelector=farm%3Dseed` },
    { path: coll, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    { path: '/apis/farm.example.com/v1alpha/llamas', accept: 'application/yaml' },
    // An update names the resourceVersion it read: the GET's, filled in below.
    { method: 'PUT', path: `${coll}/seed`, body: llama('seed', 101) },
    { method: 'PATCH', path: `${coll}/seed`, body: { spec: { weight: 102 } }, type: 'application/merge-patch+json' },
    { method: 'PATCH', path: `${coll}/seed`, body: [{ op: 'replace', path: '/spec/weight', value: 103 }], type: 'application/json-patch+json' },
    { method: 'PATCH', path: `${coll}/seed-apply?fieldManager=seed`, body: llama('seed-apply', 100), type: 'application/apply-patch+yaml' },
    { path: `${coll}?watch=1&resourceVersion=0`, forMs: 200 },
    { method: 'DELETE', path: `${coll}/seed` }, { method: 'DELETE', path: coll },
    { path: `${coll}/missing`, expect: 404 },
  ];
}

/** Kills `child` when this process ends or is stopped (Ctrl-C, a CI timeout) first: no server left behind. */
function killWithUs(child: ChildProcess, work: string): () => void {
  const onExit = () => child.kill('SIGKILL');
  const onSignal = (signal: NodeJS.Signals) => {
    child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
    off();
    process.kill(process.pid, signal);
  };
  const off = () => {
    process.off('exit', onExit);
    for (const sig of SIGNALS) process.off(sig, onSignal);
  };
  process.on('exit', onExit);
  for (const sig of SIGNALS) process.on(sig, onSignal);
  return off;
}
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Runs the entry until it serves, sends `warmUp()`, stops it with SIGTERM; the code its exit saved
 * (for the source `key`). `undefined` when its port was taken before it listened (freePort's race).
 */
async function runOnce(entry: string, node: string, work: string, key: string): Promise<Buffer | undefined> {
  const certDir = join(work, 'certs');
  const cache = join(work, 'cache');
  rmSync(cache, { recursive: true, force: true });
  const port = await freePort();
  // Only what the start needs: no FARM_* flags, kube's in-cluster variables or NODE_OPTIONS of the caller.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, NODE_COMPILE_CACHE: cache };
  const child = spawn(node, [entry, '--port', String(port), '--bind-address', '127.0.0.1', '--cert-dir', certDir, '--log-level', 'warn'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const off = killWithUs(child, work);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const ca = () => readFileSync(join(certDir, 'ca.crt'), 'utf8');
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(existsSync(join(certDir, 'token')) && (await call(port, ca(), '', { path: '/readyz' })).status === 200)) {
      if (child.exitCode !== null && stderr.includes('EADDRINUSE')) return undefined;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the warm-up server did not get ready: ${stderr}`);
      await sleep(20);
    }
    const token = readFileSync(join(certDir, 'token'), 'utf8').trim();
    let resourceVersion = '';
    for (const c of warmUp()) {
      if (c.method === 'PUT') c.body = { ...(c.body as object), metadata: { name: 'seed', resourceVersion } };
      const { status, body } = await call(port, ca(), token, c);
      if (c.expect === undefined ? status < 200 || status > 299 : status !== c.expect) throw new Error(`warm-up ${c.method ?? 'GET'} ${c.path}: ${status} ${body}: ${stderr}`);
      if (!c.method && c.path.endsWith('/seed')) resourceVersion = (JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    }
    child.kill('SIGTERM');
    // Not ref'd: a pending limit would hold the build open after the child's exit.
    const code = await Promise.race([exited, sleep(STOP_TIMEOUT_MS, 'timeout' as const, { ref: false })]);
    if (code !== 0) throw new Error(`the warm-up server's exit: ${code}: ${stderr}`);
  } finally {
    child.kill('SIGKILL');
    off();
  }
  const dir = join(cache, 'farm-apiserver');
  const files = readdirSync(dir).filter((f) => f.endsWith('.v8'));
  const data = files.length === 1 ? readCacheFile(join(dir, files[0]), key, () => true) : undefined;
  if (!data) throw new Error(`the warm-up server left ${files.length} cache files in ${dir}`);
  return data;
}

/**
 * Whether a start of `entry` in an empty cache directory runs the cache in `file` (`codeBytes` of
 * code): V8 accepts it and the process exits 0. A cache that V8 rejects (another Node) or crashes on
 * is not shipped. V8's --profile-deserialization names the size of each cache it accepted.
 */
function startsWith(entry: string, node: string, work: string, codeBytes: number): string | undefined {
  const cache = join(work, 'verify');
  rmSync(cache, { recursive: true, force: true });
  const r = spawnSync(node, ['--profile-deserialization', entry, '--help'], { env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: cache }, encoding: 'utf8', timeout: START_TIMEOUT_MS });
  if (r.status !== 0) return `exit ${r.status ?? r.signal}: ${r.error?.message ?? r.stderr}`;
  return deserializedSizes(r.stdout).includes(codeBytes) ? undefined : 'V8 did not run it';
}

/** The size of each code cache V8 accepted, from the output of a run with --profile-deserialization. */
export function deserializedSizes(output: string): number[] {
  return [...output.matchAll(/Deserializing from (\d+) bytes/g)].map((m) => Number(m[1]));
}

/**
 * Makes the build's cache for `entry` (dist/farm-apiserver.js) on `node` unless a good one is there
 * (0644, the bundle's owner's, for this source); removes those of other builds of the bundle. Checks
 * that a start runs it, or throws. Returns the cache file.
 */
export async function seedCodeCache(entry: string, node = process.execPath): Promise<string> {
  const dist = dirname(entry);
  const bundle = readFileSync(join(dist, BUNDLE_NAME));
  const key = sourceKey(bundle);
  const name = seedFileName(nodeIdentity(node), bundle);
  const file = join(dist, name);
  for (const f of readdirSync(dist)) if (isSeedFileName(f) && !f.endsWith(`-${key}.v8`)) rmSync(join(dist, f), { force: true });
  const owner = statSync(join(dist, BUNDLE_NAME)).uid;
  const work = mkdtempSync(join(tmpdir(), 'farm-seed-'));
  try {
    chmodSync(work, 0o700);
    let code = readCacheFile(file, key, (st) => (st.mode & 0o777) === 0o644 && st.uid === owner);
    if (!code) {
      for (let attempt = 0; !code && attempt < 3; attempt++) code = await runOnce(entry, node, work, key);
      if (!code) throw new Error('the warm-up server found its port taken three times');
      writeCacheFile(file, key, code, 0o644);
    }
    const failed = startsWith(entry, node, work, code.length);
    if (failed) {
      rmSync(file, { force: true });
      throw new Error(`the build's code cache ${file} is not run by a start (${failed}): not shipped`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return file;
}
