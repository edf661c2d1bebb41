// Replicas of the real server process on one real etcd (issue 10): one truth across replicas, nothing
// acknowledged lost to a crash or a restart, exact counts under cross-replica contention, an etcd
// outage that degrades to Status errors and recovers on its own, and kube's compactor taking turns.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectEtcd } from '../../src/storage/etcd3/client.js';
import { freePort } from '../cluster/controlPlane.js';
import { COMPACT_REV_KEY } from '../../src/storage/etcd3/compactor.js';
import { eventually } from '../e2e/e2e.helpers.js';
import type { TestEtcd } from '../helpers/etcd.js';
import { etcdReplicas, type EtcdReplicas, type Replica, type ReplicaSet } from '../helpers/replicas.js';
import type { Stream } from '../helpers/testServer.js';

const NS = 'herd';
const base = `/apis/farm.example.com/v1alpha/namespaces/${NS}/llamas`;
/** Read-modify-writes per writer in the contention test (the issue asks 1,000; lower it locally with the env). */
const RMW_PER_WRITER = Number(process.env.FARM_RMW_PER_WRITER ?? 1000);

interface Llama {
  metadata: { name: string; uid: string; resourceVersion: string; labels?: Record<string, string> };
  spec: { weight: number; height: number };
}
interface WatchEvent { type: string; object: Llama & { kind: string } }

/** A llama whose three copies of `n` must agree: a half-applied write would show as disagreement. */
const llama = (name: string, n = 1) => ({
  apiVersion: 'farm.example.com/v1alpha', kind: 'Llama',
  metadata: { name, namespace: NS, labels: { n: String(n) } }, spec: { weight: n, height: n },
});
const whole = (l: Llama) => l.spec.weight === l.spec.height && String(l.spec.weight) === l.metadata.labels?.n;

async function ok<T>(p: Promise<{ status: number; body: string; json<U>(): U }>, want = [200, 201]): Promise<T> {
  const r = await p;
  assert.ok(want.includes(r.status), `status ${r.status}: ${r.body.slice(0, 500)}`);
  return r.json<T>();
}

/**
 * A request as client-go sends it: a 429 (a restarted replica whose watch cache is still being filled
 * answers so, KEP-4568) is retried after its Retry-After, for at most 30 s.
 */
async function retrying429<R extends { status: number; headers?: Record<string, string | string[] | undefined> }>(send: () => Promise<R>): Promise<R> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await send();
    if (r.status !== 429 || Date.now() > deadline) return r;
    const after = Number(r.headers?.['retry-after'] ?? 1);
    await new Promise((res) => setTimeout(res, after * 1000));
  }
}

async function nextEvent(s: Stream, timeoutMs = 10_000): Promise<WatchEvent> {
  return JSON.parse(await s.next(timeoutMs)) as WatchEvent;
}

describe('replicas on one etcd', () => {
  let env: EtcdReplicas;
  let etcd: TestEtcd;
  let set: ReplicaSet;
  let a: Replica;
  let b: Replica;

  before(async () => {
    // No compaction here: the outage test wants the caches to resume, not relist.
    env = await etcdReplicas('replicas', ['--etcd-compaction-interval=0']);
    ({ etcd, set } = env);
    [a, b] = await Promise.all([set.add('a'), set.add('b')]);
  });
  after(() => env?.close());

  it('names etcd in /livez and etcd, etcd-readiness in /readyz, as kube-apiserver does', async () => {
    const livez = await a.request('GET', '/livez?verbose');
    assert.equal(livez.status, 200, livez.body);
    assert.match(livez.body, /^\[\+\]etcd ok$/m);
    assert.doesNotMatch(livez.body, /etcd-readiness/);
    const readyz = await a.request('GET', '/readyz?verbose');
    assert.equal(readyz.status, 200, readyz.body);
    assert.match(readyz.body, /^\[\+\]etcd ok$/m);
    assert.match(readyz.body, /^\[\+\]etcd-readiness ok$/m);
    assert.equal((await a.request('GET', '/readyz/etcd-readiness')).body, 'ok');
  });

  it('a write through one replica is read at once through the other, and watched there in order', async () => {
    const created = await ok<Llama>(a.request('POST', base, llama('one-truth')));
    const read = await ok<Llama>(b.request('GET', `${base}/one-truth`));
    assert.equal(read.metadata.uid, created.metadata.uid);
    assert.equal(read.metadata.resourceVersion, created.metadata.resourceVersion);

    // List on A, watch on B from the list's RV, write alternately through both.
    const list = await ok<{ metadata: { resourceVersion: string } }>(a.request('GET', base));
    const w = await b.stream(`${base}?watch=true&resourceVersion=${list.metadata.resourceVersion}`);
    assert.equal(w.status, 200);
    const written: string[] = [];
    for (let i = 0; i < 10; i++) {
      const via = i % 2 === 0 ? a : b;
      written.push((await ok<Llama>(via.request('POST', base, llama(`order-${i}`)))).metadata.resourceVersion);
    }
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const ev = await nextEvent(w);
      assert.equal(ev.type, 'ADDED');
      assert.equal(ev.object.metadata.name, `order-${i}`);
      seen.push(ev.object.metadata.resourceVersion);
    }
    w.close();
    assert.deepEqual(seen, written);
  });

  it('every llama keeps its uid and resourceVersion across a restart of all replicas; a watch resumes without a gap', async () => {
    const before = (await ok<{ items: Llama[]; metadata: { resourceVersion: string } }>(a.request('GET', base)));
    assert.ok(before.items.length >= 11);
    await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
    await Promise.all([a.start(), b.start()]);
    for (const r of [a, b]) {
      const after = await ok<{ items: Llama[] }>(retrying429(() => r.request('GET', base)));
      assert.deepEqual(after.items.map((l) => [l.metadata.name, l.metadata.uid, l.metadata.resourceVersion]),
        before.items.map((l) => [l.metadata.name, l.metadata.uid, l.metadata.resourceVersion]));
    }
    // Nothing was written meanwhile: the last RV seen before the restart is where both caches start.
    const w = await retrying429(() => a.stream(`${base}?watch=true&resourceVersion=${before.metadata.resourceVersion}`));
    assert.equal(w.status, 200);
    const next = await ok<Llama>(b.request('POST', base, llama('after-restart')));
    const ev = await nextEvent(w);
    w.close();
    assert.equal(ev.object.metadata.name, 'after-restart');
    assert.equal(ev.object.metadata.resourceVersion, next.metadata.resourceVersion);
  });

  it('a write storm through two replicas, one SIGKILLed mid-storm: every acknowledged write survives on both, none half-applied', async () => {
    const acknowledged = new Map<string, { uid: string; n: number; rv: string }>();
    let stop = false;
    let killed = false;
    const writer = async (id: number) => {
      const via = id % 2 === 0 ? a : b;
      for (let i = 0; !stop && i < 10_000; i++) {
        const name = `storm-${id}-${i}`;
        try {
          const c = await via.request('POST', base, llama(name), { timeoutMs: 10_000 });
          if (c.status !== 201) { if (killed && via === a) return; continue; }
          const made = c.json<Llama>();
          acknowledged.set(name, { uid: made.metadata.uid, n: 1, rv: made.metadata.resourceVersion });
          const u = await via.request('PUT', `${base}/${name}`, { ...llama(name, 2), metadata: { ...llama(name, 2).metadata, resourceVersion: made.metadata.resourceVersion } }, { timeoutMs: 10_000 });
          if (u.status === 200) acknowledged.set(name, { uid: made.metadata.uid, n: 2, rv: u.json<Llama>().metadata.resourceVersion });
        } catch {
          // A connection the crash cut: not acknowledged, so nothing is promised about it.
          if (via === a && killed) return;
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, i) => writer(i));
    await new Promise((r) => setTimeout(r, 1500));
    killed = true;
    await a.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(writers);
    await a.start();
    assert.ok(acknowledged.size > 20, `only ${acknowledged.size} writes acknowledged`);

    for (const r of [a, b]) {
      const list = await ok<{ items: Llama[] }>(retrying429(() => r.request('GET', base)));
      const stored = new Map(list.items.map((l) => [l.metadata.name, l]));
      for (const [name, ack] of acknowledged) {
        const l = stored.get(name);
        assert.ok(l, `${r.name}: acknowledged ${name} is missing`);
        assert.equal(l.metadata.uid, ack.uid, `${r.name}: ${name} has another uid`);
        assert.ok(l.spec.weight >= ack.n, `${r.name}: ${name} lost an acknowledged update`);
        assert.ok(BigInt(l.metadata.resourceVersion) >= BigInt(ack.rv));
      }
      for (const l of list.items) assert.ok(whole(l), `${r.name}: ${l.metadata.name} is half-applied: ${JSON.stringify(l)}`);
    }
  });

  it(`8 writers over 2 replicas, ${RMW_PER_WRITER} read-modify-writes each on one llama: the count is exact and a third connection watches every RV once, in order`, { timeout: 20 * 60_000 }, async () => {
    const name = 'contended';
    const first = await ok<Llama>(a.request('POST', base, llama(name, 1)));
    const w = await b.stream(`${base}?watch=true&resourceVersion=${first.metadata.resourceVersion}&fieldSelector=metadata.name%3D${name}`);
    let conflicts = 0;
    const writer = async (id: number) => {
      const via = id % 2 === 0 ? a : b;
      for (let done = 0; done < RMW_PER_WRITER;) {
        const cur = await ok<Llama>(via.request('GET', `${base}/${name}`));
        const n = cur.spec.weight + 1;
        const next = { ...llama(name, n), metadata: { ...llama(name, n).metadata, resourceVersion: cur.metadata.resourceVersion } };
        const r = await via.request('PUT', `${base}/${name}`, next);
        if (r.status === 200) done++;
        else if (r.status === 409) conflicts++;
        else assert.fail(`PUT answered ${r.status}: ${r.body}`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => writer(i)));
    const total = 8 * RMW_PER_WRITER;
    const final = await ok<Llama>(a.request('GET', `${base}/${name}`));
    assert.equal(final.spec.weight, 1 + total, `after ${conflicts} conflicts`);
    let last = BigInt(first.metadata.resourceVersion);
    for (let n = 2; n <= 1 + total; n++) {
      const ev = await nextEvent(w);
      assert.equal(ev.type, 'MODIFIED');
      assert.equal(ev.object.spec.weight, n, 'each update seen once, in order');
      const rv = BigInt(ev.object.metadata.resourceVersion);
      assert.ok(rv > last, `RV ${rv} after ${last}`);
      last = rv;
    }
    w.close();
    assert.equal(String(last), final.metadata.resourceVersion);
  });

  it('etcd stopped for 20 s: readiness fails, requests get Status errors quickly, then everything recovers on its own', { timeout: 120_000 }, async () => {
    const kept = await ok<Llama>(a.request('POST', base, llama('before-outage')));
    const w = await b.stream(`${base}?watch=true&resourceVersion=${kept.metadata.resourceVersion}`);
    await etcd.kill();
    const down = Date.now();
    await eventually('/readyz to fail on etcd', 10_000, async () => {
      const r = await a.request('GET', '/readyz?verbose');
      return r.status === 500 && /\[-\]etcd failed: /.test(r.body);
    });
    const livez = await a.request('GET', '/livez?verbose');
    assert.equal(livez.status, 500);
    assert.match(livez.body, /\[-\]etcd failed: error getting data from etcd/);
    for (const [method, path, body] of [['GET', base], ['GET', `${base}/before-outage`], ['POST', base, llama('during-outage')],
      ['DELETE', `${base}/before-outage`]] as const) {
      const t0 = Date.now();
      const r = await b.request(method, path, body, { timeoutMs: 20_000 });
      assert.ok([503, 504].includes(r.status), `${method} ${path}: ${r.status} ${r.body}`);
      assert.equal(r.json<{ kind: string }>().kind, 'Status');
      assert.ok(Date.now() - t0 < 10_000, `${method} ${path} took ${Date.now() - t0} ms`);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 20_000 - (Date.now() - down))));
    await etcd.restart();
    await eventually('both replicas ready again', 30_000, async () =>
      (await a.request('GET', '/readyz')).status === 200 && (await b.request('GET', '/readyz')).status === 200);
    const back = await ok<Llama>(b.request('GET', `${base}/before-outage`));
    assert.equal(back.metadata.uid, kept.metadata.uid);
    assert.equal((await a.request('GET', `${base}/during-outage`)).status, 404, 'the refused create left nothing');
    const after = await ok<Llama>(a.request('POST', base, llama('after-outage')));
    // The watch opened before the outage carries on: the cache resumed from where it was.
    const ev = await nextEvent(w, 15_000);
    w.close();
    assert.equal(ev.object.metadata.name, 'after-outage');
    assert.equal(ev.object.metadata.resourceVersion, after.metadata.resourceVersion);
  });
});

describe('compaction on replicas (kube compactor: compact_rev_key as a logical clock)', () => {
  let env: EtcdReplicas;
  let etcd: TestEtcd;
  let a: Replica;

  before(async () => {
    env = await etcdReplicas('compact', ['--etcd-compaction-interval=1s', '--watch-history=5']);
    etcd = env.etcd;
    [a] = await Promise.all([env.set.add('a'), env.set.add('b')]);
  });
  after(() => env?.close());

  it('two replicas compact one at a time: the clock advances about once per interval, and old revisions are gone from etcd', async () => {
    const client = connectEtcd({ hosts: [etcd.url] });
    try {
      const clock = async () => Number((await client.range({ key: Buffer.from(COMPACT_REV_KEY) })).kvs[0]?.version ?? 0);
      await eventually('the first turn', 10_000, async () => (await clock()) >= 1);
      const first = await ok<Llama>(a.request('POST', base, llama('compact-me')));
      const t0 = Date.now();
      const v0 = await clock();
      await new Promise((r) => setTimeout(r, 5_000));
      const turns = (await clock()) - v0;
      const intervals = (Date.now() - t0) / 1000;
      // Two replicas each trying every second would make two turns a second; one winner makes one.
      assert.ok(turns >= 2 && turns <= intervals + 1, `${turns} turns in ${intervals.toFixed(1)} s`);
      await assert.rejects(client.range({ key: Buffer.from('/registry/farm.example.com/llamas/herd/compact-me'), revision: Number(first.metadata.resourceVersion) }),
        /compacted/);
    } finally {
      client.close();
    }
  });

  it('a watch from a resourceVersion past the watch cache window gets 410 Expired; a list and a watch from it converge', async () => {
    const first = await ok<Llama>(a.request('POST', base, llama('window-0')));
    for (let i = 1; i <= 12; i++) await ok<Llama>(a.request('POST', base, llama(`window-${i}`)));
    const gone = await a.stream(`${base}?watch=true&resourceVersion=${first.metadata.resourceVersion}`);
    const ev = await nextEvent(gone);
    gone.close();
    assert.equal(ev.type, 'ERROR');
    assert.equal((ev.object as unknown as { code: number; reason: string }).code, 410);
    // What an informer does next: list, then watch from the list's RV.
    const list = await ok<{ items: Llama[]; metadata: { resourceVersion: string } }>(a.request('GET', base));
    assert.ok(list.items.some((l) => l.metadata.name === 'window-12'));
    const w = await a.stream(`${base}?watch=true&resourceVersion=${list.metadata.resourceVersion}`);
    const made = await ok<Llama>(a.request('POST', base, llama('window-13')));
    const next = await nextEvent(w);
    w.close();
    assert.equal(next.object.metadata.resourceVersion, made.metadata.resourceVersion);
  });
});

describe('--workers 2 on etcd3: two processes share one port', () => {
  let env: EtcdReplicas;
  let server: Replica;

  before(async () => {
    env = await etcdReplicas('workers', ['--etcd-compaction-interval=0']);
    // debug: every request is logged with its process's pid.
    server = await env.set.add('workers', ['--workers', '2', '--log-level', 'debug']);
  });
  after(() => env?.close());

  /** The pids that logged an incoming request since `from` bytes into the log. */
  const servingPids = (from: number) => new Set(readFileSync(server.log, 'utf8').slice(from).split('\n')
    .filter((l) => l.includes('"incoming request"')).map((l) => (JSON.parse(l) as { pid: number }).pid));

  it('connections are spread over both workers, and each reads what the other wrote', async () => {
    const mark = readFileSync(server.log, 'utf8').length;
    const made = await ok<Llama>(server.request('POST', base, llama('shared-port')));
    // Fresh connections each (the primary hands connections out round-robin to the workers listening; on a
    // loaded machine one worker can still be starting, so the reads repeat for up to 30 s).
    const deadline = Date.now() + 30_000;
    do {
      const reads = await Promise.all(Array.from({ length: 20 }, () => server.request('GET', `${base}/shared-port`, undefined, { fresh: true })));
      for (const r of reads) {
        assert.equal(r.status, 200, r.body);
        assert.equal(r.json<Llama>().metadata.resourceVersion, made.metadata.resourceVersion);
      }
    } while (servingPids(mark).size < 2 && Date.now() < deadline && (await new Promise((r) => setTimeout(r, 500)), true));
    assert.equal(servingPids(mark).size, 2, 'both workers served requests');
  });

  it('a worker that dies is replaced; SIGTERM to the server stops every worker and exits 0', { timeout: 120_000 }, async (t) => {
    const pids = [...servingPids(0)];
    process.kill(pids[0], 'SIGKILL');
    const t0 = Date.now();
    // A connection the primary handed to the worker as it died is lost with it: short timeouts, and retry.
    await eventually('a new worker serving', 60_000, async () => {
      const mark = readFileSync(server.log, 'utf8').length;
      await Promise.allSettled(Array.from({ length: 10 }, () => server.request('GET', `${base}/shared-port`, undefined, { fresh: true, timeoutMs: 3_000 })));
      const now = servingPids(mark);
      return now.size === 2 && !now.has(pids[0]);
    });
    t.diagnostic(`a replacement worker served ${Date.now() - t0} ms after the kill`);
    const exit = await server.kill('SIGTERM');
    assert.equal(exit, 0);
    for (const pid of servingPids(0)) assert.throws(() => process.kill(pid, 0), 'no worker is left behind');
  });
});

describe('cluster mode on etcd3 whose kube-apiserver cannot be reached', () => {
  let env: EtcdReplicas;
  before(async () => { env = await etcdReplicas('unreachable-kube'); });
  after(() => env?.close());

  it('the watch cache, filled after the start\'s own work, still fills (~1 s at most), though the start never finishes it', { timeout: 60_000 }, async () => {
    // A kube-apiserver on a port nothing listens on: the trust ConfigMap and the upstream caches never sync.
    const closed = await freePort();
    const kubeconfig = join(env.dir, 'unreachable.kubeconfig');
    writeFileSync(kubeconfig, [
      'apiVersion: v1', 'kind: Config', 'current-context: c',
      'clusters: [{name: k, cluster: {server: "https://127.0.0.1:' + String(closed) + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: t}}]', 'contexts: [{name: c, context: {cluster: k, user: u}}]', '',
    ].join('\n'));
    const log = join(env.dir, 'unreachable.log');
    const fd = openSync(log, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../src/main.ts'),
      '--kubeconfig', kubeconfig, '--port', String(await freePort()), '--bind-address', '127.0.0.1', '--cert-dir', env.set.certDir,
      '--log-level', 'info', '--storage-backend', 'etcd3', '--etcd-servers', env.etcd.url], { stdio: ['ignore', fd, fd], env: { PATH: process.env.PATH ?? '', HOME: env.dir } });
    closeSync(fd);
    try {
      // Whole lines only (the last may still be being written); JSON ones (pino's).
      const lines = () => readFileSync(log, 'utf8').split('\n').slice(0, -1).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; time: number });
      await eventually('the watch cache synced with etcd', 30_000, async () => lines().some((l) => l.msg === 'etcd: watch cache synced'));
      const at = (msg: string) => lines().find((l) => l.msg === msg)?.time;
      const listening = lines().find((l) => l.msg.startsWith('Server listening'))?.time;
      assert.ok(listening !== undefined, 'it listens');
      assert.equal(at('cluster mode: read kube-system/extension-apiserver-authentication'), undefined, 'kube-apiserver was never reached');
      const waited = (at('etcd: watch cache synced') ?? 0) - listening;
      assert.ok(waited >= 900 && waited < 15_000, `the fill waited ~1 s for the start's own work (${waited} ms)`);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
