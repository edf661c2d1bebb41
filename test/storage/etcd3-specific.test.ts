// What the etcd3 backend adds to the storage contract, against a real etcd: replicas sharing one etcd
// (same changes in the same order at the same resourceVersions, watches and consistent reads across
// them), an etcd outage (unavailable, then recovery without losing a change), a compacted resume
// (relist, watchers closed, older resourceVersions TooOld), reads while the cache is being filled
// (KEP-4568: from etcd, or 429) and the layout of keys and values in etcd.
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { connectEtcd, type EtcdClient, type WatchStream } from '../../src/storage/etcd3/client.js';
import { GrpcError } from '../../src/storage/etcd3/grpc.js';
import { COMPACT_REV_KEY, compactTurn } from '../../src/storage/etcd3/compactor.js';
import { CONTINUE_LATEST, encodeContinue } from '../../src/storage/continueToken.js';
import { Etcd3Storage } from '../../src/storage/etcd3/etcd3Storage.js';
import { isApiError } from '../../src/apimachinery/status.js';
import { isStorageError } from '../../src/storage/errors.js';
import type { Change, WatchItem } from '../../src/storage/interfaces.js';
import { freePort } from '../cluster/controlPlane.js';
import { startEtcd, type TestEtcd } from '../helpers/etcd.js';
import fc from 'fast-check';
import type { ListResult } from '../../src/storage/interfaces.js';
import { listOpts } from './contractLists.js';
import { describeItem, keysOf, llama, rejectsWithApiError, rejectsWithCode, takeItems, withLabels, within } from './harness.js';

const CASE = { timeout: 45_000 };

/** `n` llamas "ns/l00000"… written straight into etcd under `prefix`, 128 puts per Txn; their keys. */
async function putLlamas(client: EtcdClient, prefix: string, n: number, extra: Parameters<typeof llama>[1] = {}): Promise<string[]> {
  const keys = Array.from({ length: n }, (_, i) => `ns/l${String(i).padStart(5, '0')}`);
  for (let i = 0; i < keys.length; i += 128) {
    await client.txn({ success: keys.slice(i, i + 128).map((k) => ({ request_put: { key: Buffer.from(`${prefix}/${k}`), value: Buffer.from(JSON.stringify(llama(k, extra))) } })) });
  }
  return keys;
}
const PREFIX = '/registry/farm.example.com/llamas';

let etcd: TestEtcd;
before(async () => { etcd = await startEtcd(); });
after(() => etcd?.stop());

interface Replica { storage: Etcd3Storage; client: EtcdClient }
const open: Replica[] = [];
let prefixes = 0;

async function replica(prefix: string, url = etcd.url): Promise<Etcd3Storage> {
  const client = connectEtcd({ hosts: [url] });
  const storage = new Etcd3Storage({ client, prefix, historyLimit: 1000 });
  open.push({ storage, client });
  await storage.start();
  return storage;
}

async function closeAll(): Promise<void> {
  for (const r of open.splice(0)) {
    await r.storage.stop();
    r.client.close();
  }
}

const freshPrefix = () => `${PREFIX}-${++prefixes}`;

/** Polls (bounded) until `cond` holds. */
async function eventually(cond: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits (bounded) until `s` serves watches: a refilling cache answers them 429 until its etcd watch is synced. */
async function synced(s: Etcd3Storage, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      (await s.watch({ prefix: '', fromRV: s.resourceVersion, predicate: {}, capacity: 1 })).close();
      return;
    } catch (e) {
      if (!isApiError(e) || e.code !== 429 || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

const changeLine = (c: Change) => `${c.type} ${c.entry.key}@${c.rv} ${c.entry.json}`;
const increment = (s: Etcd3Storage, key: string) => s.guaranteedUpdate(key, async (cur) => {
  const n = (cur?.object.spec as { n?: number } | undefined)?.n ?? 0;
  return { object: { ...(cur?.object ?? llama(key)), spec: { n: n + 1 } }, result: n + 1 };
});

/** `client`'s watch stream with every response delivered `ms` late (a replica whose cache lags etcd); a function: the lag when each arrives. */
async function laggingWatch(client: EtcdClient, ms: number | (() => number)): Promise<WatchStream> {
  const lag = typeof ms === 'number' ? () => ms : ms;
  const stream = await client.watchStream();
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'on') {
        return (event: string, fn: (...args: unknown[]) => void) => {
          const on = target.on.bind(target) as (e: string, f: (...args: unknown[]) => void) => unknown;
          // unref: a response still on its way when the test ends does not hold the process.
          on(event, event === 'data' ? (...args: unknown[]) => { setTimeout(() => fn(...args), lag()).unref(); } : fn);
          return target;
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A loopback TCP proxy to etcd that can be cut and restored: a network partition of one replica. */
class Partition {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  constructor(readonly port: number, private readonly target: number) {}

  get url(): string { return `http://127.0.0.1:${this.port}`; }

  async connect(): Promise<void> {
    const server = createServer((down) => {
      const up = connect(this.target, '127.0.0.1');
      for (const s of [down, up]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => { down.destroy(); up.destroy(); });
      }
      down.pipe(up);
      up.pipe(down);
    });
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(this.port, '127.0.0.1', resolve); });
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('Etcd3Storage on a real etcd', () => {
  after(closeAll);

  it('two replicas: writes through either are seen by both caches, in the same order, at the same resourceVersions', CASE, async (t) => {
    const prefix = freshPrefix();
    const [a, b] = [await replica(prefix), await replica(prefix)];
    const seen: [string[], string[]] = [[], []];
    a.view.subscribe((c) => seen[0].push(changeLine(c)));
    b.view.subscribe((c) => seen[1].push(changeLine(c)));
    const rvs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const [w, other] = i % 2 ? [a, b] : [b, a];
      rvs.push((await w.create(`ns/o${i}`, llama(`ns/o${i}`))).rv);
      rvs.push((await increment(other, `ns/o${i}`)).entry.rv);
      if (i % 3 === 0) rvs.push((await w.delete(`ns/o${i}`)).rv);
    }
    // Racing writers on both replicas: retried transactions lose nothing (a Conflict after 10 lost races is
    // retried as a client retries a 409).
    let conflicts = 0;
    await Promise.all([a, b, a, b].map(async (s) => {
      for (let i = 0; i < 10; i++) {
        for (let tries = 1; ; tries++) {
          try {
            await increment(s, 'ns/counter');
            break;
          } catch (e) {
            if (!isStorageError(e, 'Conflict') || tries >= 20) throw e;
            conflicts++;
          }
        }
      }
    }));
    t.diagnostic(`4 racing writers x 10 increments: ${conflicts} Conflict answers retried`);
    const last = Math.max(a.resourceVersion, b.resourceVersion);
    await Promise.all([a.waitUntilFresh(String(last)), b.waitUntilFresh(String(last))]);
    assert.equal(seen[0].length, 20 + 20 + 7 + 40);
    assert.deepEqual(seen[1], seen[0]);
    assert.deepEqual((await b.get('ns/counter'))?.object.spec, { n: 40 });
    for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i] > rvs[i - 1], 'resourceVersions increase across replicas');
  });

  it('a client lists on one replica and watches from that resourceVersion on another: every later change, in order', CASE, async () => {
    const prefix = freshPrefix();
    const [a, b] = [await replica(prefix), await replica(prefix)];
    await a.create('ns/x', llama('ns/x'));
    const listed = await a.list({ prefix: 'ns/', resourceVersion: '', resourceVersionMatch: '', continue: '', limit: 0, predicate: {} });
    const y = await a.create('ns/y', llama('ns/y'));
    const x2 = (await increment(a, 'ns/x')).entry;
    const w = await b.watch({ prefix: 'ns/', fromRV: listed.resourceVersion, predicate: {}, capacity: 100 });
    try {
      const gone = await a.delete('ns/y');
      const items = await takeItems(w, 3);
      assert.deepEqual(items.map(describeItem), [`ADDED ns/y@${y.rv}`, `MODIFIED ns/x@${x2.rv}`, `DELETED ns/y@${gone.rv}`]);
      assert.deepEqual(items.map((i) => ('entry' in i ? i.entry : undefined)), [y, x2, gone], 'the same entries the writer got back');
    } finally {
      w.close();
    }
  });

  it('consistent reads on a replica see a write acknowledged by another at once, even when nothing under its prefix changed since', CASE, async () => {
    const prefix = freshPrefix();
    const [a, b] = [await replica(prefix), await replica(prefix)];
    for (let i = 0; i < 30; i++) {
      const e = await a.create(`ns/o${i}`, llama(`ns/o${i}`));
      assert.deepEqual(await b.get(`ns/o${i}`), e, `get ${i}`);
      const l = await b.list({ prefix: 'ns/', resourceVersion: '', resourceVersionMatch: '', continue: '', limit: 0, predicate: {} });
      assert.equal(l.items.length, i + 1);
      assert.ok(l.resourceVersion >= e.rv);
    }
    // A write elsewhere in etcd moves its revision past b's cache: only a progress notification can catch b up.
    const other = await replica(freshPrefix());
    const elsewhere = await other.create('ns/z', llama('ns/z'));
    assert.ok(b.resourceVersion < elsewhere.rv);
    const started = Date.now();
    await within(b.get('ns/o0'), 1_000, 'a consistent get after a write under another prefix');
    assert.ok(b.resourceVersion >= elsewhere.rv, `b's cache advanced to ${b.resourceVersion} by a progress notification`);
    assert.ok(Date.now() - started < 1_000);
    // Waiting for a revision ahead of the cache asks for progress too.
    const later = await other.create('ns/z2', llama('ns/z2'));
    await within(b.waitUntilFresh(String(later.rv)), 1_000, 'waitUntilFresh for a revision written under another prefix');
  });

  it('consistent reads under concurrency, on a replica whose etcd answers lag, each see every write acknowledged before they began', CASE, async () => {
    const prefix = freshPrefix();
    const a = await replica(prefix);
    const client = connectEtcd({ hosts: [etcd.url] });
    let ranges = 0;
    // b's answers come 30 ms late (its watch and its ranges): a revision request sent before a write was
    // acknowledged is still in flight after it, and only waiting for a later one makes b see the write.
    const lagging: EtcdClient = {
      ...client,
      range: async (req) => {
        ranges++;
        const res = await client.range(req);
        await new Promise((r) => setTimeout(r, 30));
        return res;
      },
      watchStream: () => laggingWatch(client, 30),
    };
    const b = new Etcd3Storage({ client: lagging, prefix, historyLimit: 1000 });
    open.push({ storage: b, client });
    await b.start();
    // Readers in the background keep a revision request in flight nearly all the time.
    let stop = false;
    let reads = 0;
    const background = Array.from({ length: 4 }, async () => {
      while (!stop) { await b.get('ns/none'); reads++; }
    });
    try {
      for (let i = 0; i < 40; i++) {
        const e = await a.create(`ns/o${i}`, llama(`ns/o${i}`));
        const seen = await Promise.all(Array.from({ length: 4 }, () => b.get(e.key)));
        reads += seen.length;
        for (const got of seen) assert.equal(got?.rv, e.rv, `a read begun after the ack of ${e.key}`);
      }
    } finally {
      stop = true;
      await Promise.all(background);
    }
    // Reads share revision ranges (fewer ranges than reads), yet every round's reads needed one sent after its ack.
    assert.ok(reads > 160 && ranges >= 40 && ranges < reads, `${reads} consistent gets, ${ranges} etcd ranges`);
  });

  it('a consistent read on a replica whose watch is stuck more than 3 s behind is answered from etcd (the delegator\'s fallback), not 504', CASE, async () => {
    const prefix = freshPrefix();
    const a = await replica(prefix);
    const client = connectEtcd({ hosts: [etcd.url] });
    let ranges = 0;
    // Once b is synced, its watch answers 12 s late: three waits of 3 s below, all before it delivers the write.
    let lag = 0;
    // Ranges over keys (range_end set): reads of etcd itself, not the revision probe of a consistent read.
    const stuck: EtcdClient = { ...client, range: (req) => { if (req.range_end) ranges++; return client.range(req); }, watchStream: () => laggingWatch(client, () => lag) };
    const b = new Etcd3Storage({ client: stuck, prefix, historyLimit: 1000 });
    open.push({ storage: b, client });
    await b.start();
    lag = 12_000;
    const x = await a.create('ns/x', llama('ns/x'));
    // Not a consistent read: "not older than" a revision the cache has not reached waits 3 s, then 504 with Retry-After 1, as the watch cache.
    const tooLarge = await rejectsWithCode(b.get('ns/x', String(x.rv)), 'TooLargeResourceVersion');
    assert.equal(tooLarge.detail.retryAfterSeconds, 1);
    const [got, listed] = await within(Promise.all([b.get('ns/x'), b.list(listOpts({ prefix: 'ns/' }))]), 5_000, 'consistent reads on the stuck replica');
    assert.deepEqual(got, x);
    assert.deepEqual(listed.items, [x]);
    assert.ok(listed.resourceVersion >= x.rv);
    // A continue of the latest state (a 410's token) is a consistent read too.
    const before = ranges;
    const latest = encodeContinue(CONTINUE_LATEST, 'ns/');
    assert.deepEqual((await within(b.list(listOpts({ prefix: 'ns/', continue: latest })), 5_000, 'a latest-state continue')).items, [x]);
    assert.ok(ranges > before, 'read from etcd');
    assert.ok(b.resourceVersion < x.rv, 'the cache itself was behind all along');
  });

  it('etcd down: unavailable and Unavailable errors, never a hang; back up: the caches resume and no change is lost', { timeout: 60_000 }, async () => {
    const prefix = freshPrefix();
    const [a, b] = [await replica(prefix), await replica(prefix)];
    const before = await a.create('ns/before', llama('ns/before'));
    const w = await b.watch({ prefix: 'ns/', fromRV: before.rv, predicate: {}, capacity: 100 });
    try {
      await etcd.kill();
      await eventually(() => a.unavailable() !== undefined && b.unavailable() !== undefined, 'both replicas notice', 10_000);
      await rejectsWithCode(within(a.create('ns/during', llama('ns/during')), 8_000, 'a write while etcd is down'), 'Unavailable');
      await rejectsWithCode(within(b.get('ns/before'), 8_000, 'a consistent read while etcd is down'), 'Unavailable');
      await etcd.restart();
      await eventually(() => a.unavailable() === undefined && b.unavailable() === undefined, 'both replicas resync', 20_000);
      assert.equal(w.closedReason, undefined, 'a watch survives the outage (no compaction: resumed, not relisted)');
      assert.deepEqual(await a.get('ns/before'), before, 'the acknowledged write survived');
      assert.equal(await a.get('ns/during'), undefined, 'the failed write did not happen');
      const after1 = await b.create('ns/after', llama('ns/after'));
      const after2 = (await increment(a, 'ns/before')).entry;
      const items: WatchItem[] = await takeItems(w, 2);
      assert.deepEqual(items.map(describeItem), [`ADDED ns/after@${after1.rv}`, `MODIFIED ns/before@${after2.rv}`]);
      assert.deepEqual(await a.get('ns/after'), after1);
    } finally {
      w.close();
    }
  });

  it('an etcd member that cannot be reached: calls move to the next member, so a replica given [down, up] or [up, down] syncs and serves', CASE, async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    for (const hosts of [[down, etcd.url], [etcd.url, down]]) {
      // The first member a client uses is random: each order, several clients.
      for (let n = 0; n < 4; n++) {
        const client = connectEtcd({ hosts });
        try {
          let failures = 0;
          for (let i = 0; i < 4; i++) await client.range({ key: Buffer.from('/health') }).catch(() => { failures++; });
          assert.ok(failures <= 1, `${failures} of 4 calls failed with members ${hosts.join(', ')}`);
        } finally {
          client.close();
        }
      }
      const prefix = freshPrefix();
      const client = connectEtcd({ hosts });
      const s = new Etcd3Storage({ client, prefix, historyLimit: 100 });
      open.push({ storage: s, client });
      await s.start();
      const created = await s.create('ns/a', llama('ns/a'));
      assert.deepEqual(await s.get('ns/a'), created);
    }
  });

  it('a replica cut off while etcd compacts past its cache relists: its watchers close, older resourceVersions are TooOld, the state is current', CASE, async () => {
    const prefix = freshPrefix();
    const partition = new Partition(await freePort(), Number(new URL(etcd.url).port));
    await partition.connect();
    try {
      const a = await replica(prefix);
      const b = await replica(prefix, partition.url);
      const x = await a.create('ns/x', llama('ns/x'));
      await b.waitUntilFresh(String(x.rv));
      const w = await b.watch({ prefix: 'ns/', fromRV: x.rv, predicate: {}, capacity: 100 });
      await partition.cut();
      await eventually(() => b.unavailable() !== undefined, 'the cut-off replica notices', 10_000);
      const y = await a.create('ns/y', llama('ns/y'));
      const x2 = (await increment(a, 'ns/x')).entry;
      await a.compact(a.resourceVersion);
      await partition.connect();
      // etcd first confirms the resumed watch, then cancels it as compacted: synced *and* past the compaction.
      await eventually(() => b.unavailable() === undefined && b.resourceVersion >= x2.rv, 'the replica resyncs', 20_000);
      // Its cache is refilled then, but until its new watch is synced watches get 429 (KEP-4568): retry as a client does.
      await synced(b, 10_000);
      assert.equal(await within(w.next(), 2_000, 'the watcher ends'), undefined);
      assert.equal(w.closedReason, 'closed');
      await rejectsWithCode(b.watch({ prefix: 'ns/', fromRV: x.rv, predicate: {}, capacity: 100 }), 'TooOld');
      const listed = await b.list({ prefix: 'ns/', resourceVersion: '0', resourceVersionMatch: '', continue: '', limit: 0, predicate: {} });
      assert.deepEqual(listed.items, [x2, y]);
      // a, which followed every change, still serves its history (the watch cache's window, not etcd's).
      const replay = await a.watch({ prefix: 'ns/', fromRV: x.rv, predicate: {}, capacity: 100 });
      try {
        assert.deepEqual((await takeItems(replay, 2)).map(describeItem), [`ADDED ns/y@${y.rv}`, `MODIFIED ns/x@${x2.rv}`]);
      } finally {
        replay.close();
      }
    } finally {
      await partition.cut();
    }
  });

  it('etcd holds "<prefix>/<ns>/<name>" → the object without resourceVersion; the resourceVersion is its mod_revision', CASE, async () => {
    const prefix = freshPrefix();
    const s = await replica(prefix);
    const created = await s.create('ns/a', withLabels(llama('ns/a'), { app: 'farm' }));
    const updated = (await increment(s, 'ns/a')).entry;
    const raw = new Etcd3({ hosts: [etcd.url] });
    try {
      const res = await raw.kv.range({ key: Buffer.from(`${prefix}/ns/a`) });
      assert.equal(res.kvs.length, 1);
      const stored = JSON.parse(res.kvs[0].value.toString()) as { metadata: Record<string, unknown> };
      assert.equal('resourceVersion' in stored.metadata, false, res.kvs[0].value.toString());
      const { resourceVersion, ...metadata } = updated.object.metadata;
      assert.equal(resourceVersion, String(updated.rv));
      assert.deepEqual(stored, { ...updated.object, metadata }, 'the object as stored, less its resourceVersion');
      assert.equal(Number(res.kvs[0].mod_revision), updated.rv);
      assert.equal(Number(res.kvs[0].create_revision), created.rv);
      const all = await raw.getAll().prefix(`${prefix}/`).keys();
      assert.deepEqual(all, [`${prefix}/ns/a`]);
    } finally {
      raw.close();
    }
  });

  it("kube's compactor protocol: the replica whose clock matches wins the turn and compacts what it recorded a turn ago; the other adopts its clock", CASE, async () => {
    const [one, two] = [connectEtcd({ hosts: [etcd.url] }), connectEtcd({ hosts: [etcd.url] })];
    const prefix = freshPrefix();
    const s = await replica(prefix);
    try {
      const clockOf = async () => Number((await one.range({ key: Buffer.from(COMPACT_REV_KEY) })).kvs[0]?.version ?? 0);
      const v = await clockOf();
      // First turn: records the revision, compacts nothing (compact.go: no compaction on bootstrap).
      const t1 = await compactTurn(one, v, 0);
      assert.deepEqual([t1.version, t1.compacted], [v + 1, 0]);
      const old = await s.create('ns/old', llama('ns/old'));
      await increment(s, 'ns/old');
      // The other replica still believes the clock is at v: it loses and learns the clock.
      const lost = await compactTurn(two, v, 0);
      assert.deepEqual([lost.version, lost.compacted], [v + 1, 0]);
      // The winner's next turn compacts up to the revision of its previous turn — not past writes made since.
      const t2 = await compactTurn(one, t1.version, t1.revision);
      assert.deepEqual([t2.version, t2.compacted], [v + 2, t1.revision]);
      assert.equal(await clockOf(), v + 2);
      await assert.rejects(one.range({ key: Buffer.from(`${prefix}/ns/old`), revision: t1.revision - 1 }), /compacted/);
      const kept = await one.range({ key: Buffer.from(`${prefix}/ns/old`), revision: old.rv });
      assert.equal(kept.kvs.length, 1, 'history after the compacted revision stays');
      // If the winner stops taking turns, the other takes over within two: one to learn the clock, one to win.
      const learn = await compactTurn(two, lost.version, lost.revision);
      assert.deepEqual([learn.version, learn.compacted], [v + 2, 0]);
      const t3 = await compactTurn(two, learn.version, learn.revision);
      assert.deepEqual([t3.version, t3.compacted], [v + 3, learn.revision]);
    } finally {
      one.close();
      two.close();
    }
  });

  describe('while the cache is being filled (KEP-4568, as CacheDelegator)', () => {
    /** Every page of a list, following its continue tokens. */
    async function allPages(st: Etcd3Storage, prefix: string, limit: number): Promise<ListResult[]> {
      const pages = [await st.list(listOpts({ prefix, limit }))];
      for (let last = pages[0]; last.continue; pages.push(last)) last = await st.list(listOpts({ prefix, limit, continue: last.continue }));
      return pages;
    }

    it("serves gets and limited lists from etcd, equal to a synced replica's; other lists and watches get 429; writes do not wait", { timeout: 90_000 }, async () => {
      const prefix = freshPrefix();
      const a = await replica(prefix);
      for (const key of ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e', 'other/a', 'other/b', 'zz/a']) await a.create(key, llama(key));
      // b lists at once but its watch is held: its cache stays "filling" until the test lets it go.
      const client = connectEtcd({ hosts: [etcd.url] });
      let release: () => void = () => {};
      const gate = new Promise<void>((r) => { release = r; });
      let ranges = 0;
      const held: EtcdClient = {
        ...client,
        range: (req) => { ranges++; return client.range(req); },
        watchStream: async () => { await gate; return client.watchStream(); },
      };
      const b = new Etcd3Storage({ client: held, prefix, historyLimit: 1000 });
      open.push({ storage: b, client });
      const started = b.start();
      try {
        assert.deepEqual(await b.get('ns/c'), a.view.get('ns/c'));
        assert.equal(await b.get('ns/none'), undefined);
        // From etcd itself: no retry suggested (store.go passes 0 seconds; the watch cache 1).
        assert.equal((await rejectsWithCode(b.get('ns/c', String(a.resourceVersion + 1000)), 'TooLargeResourceVersion')).detail.retryAfterSeconds, 0);

        await fc.assert(fc.asyncProperty(fc.constantFrom('ns/', 'other/', '', 'none/'), fc.integer({ min: 1, max: 9 }), async (p, limit) => {
          const pages = await allPages(b, p, limit);
          const rv = pages[0].resourceVersion;
          const whole = await a.list(listOpts({ prefix: p, resourceVersion: String(rv), resourceVersionMatch: 'Exact' }));
          assert.deepEqual(pages.flatMap((pg) => pg.items), whole.items);
          let taken = 0;
          for (const pg of pages) {
            assert.equal(pg.resourceVersion, rv, 'every page at the first one\'s revision');
            assert.ok(pg.items.length <= limit);
            taken += pg.items.length;
            assert.equal(pg.remainingItemCount, pg.continue ? whole.items.length - taken : undefined);
          }
        }), { seed: 11, numRuns: 20 });

        const initializing = /^storage is \(re\)initializing$/;
        const refused = await rejectsWithApiError(b.list(listOpts({ prefix: 'ns/' })), 429, initializing);
        assert.ok((refused.details?.retryAfterSeconds ?? 0) >= 1);
        await rejectsWithApiError(b.list(listOpts({ prefix: 'ns/', limit: 2, predicate: { matches: () => true } })), 429, initializing);
        await rejectsWithApiError(b.watch({ prefix: 'ns/', fromRV: 0, predicate: {}, capacity: 10 }), 429, initializing);
        // A watch from a resourceVersion first waits for the cache to reach it: not during a fill (429 at once, as the cacher).
        const t1 = performance.now();
        await rejectsWithApiError(b.waitUntilFresh(String(a.resourceVersion)), 429, initializing);
        assert.ok(performance.now() - t1 < 1_000, 'no freshness wait before the 429');
        // A selector that matches little: pages of twice the keys each time (store.go's pagedChunks), not one Range per key.
        for (let i = 0; i < 60; i++) await a.create(`many/m${String(i).padStart(2, '0')}`, llama(`many/m${i}`));
        const before = ranges;
        const none = await b.list(listOpts({ prefix: 'many/', limit: 1, continue: (await b.list(listOpts({ prefix: 'many/', limit: 1 }))).continue, predicate: { matches: () => false } }));
        assert.deepEqual(none.items, []);
        assert.ok(ranges - before <= 8, `${ranges - before} ranges for 60 keys`);

        const t0 = performance.now();
        const written = await b.create('ns/f', llama('ns/f'));
        assert.ok(performance.now() - t0 < 1_500, 'a write does not wait for the fill');
        assert.equal((await b.get('ns/f'))?.rv, written.rv);
        // A page read from etcd during the fill continues after it.
        const first = await b.list(listOpts({ prefix: 'ns/', limit: 2 }));
        await a.create('ns/g', llama('ns/g'));
        release();
        await within(started, 10_000, 'the fill');
        let rest = first;
        const keys = keysOf(first.items);
        while (rest.continue) {
          rest = await b.list(listOpts({ prefix: 'ns/', limit: 2, continue: rest.continue }));
          keys.push(...keysOf(rest.items));
        }
        assert.deepEqual(keys, ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e', 'ns/f'], 'as of the first page');
        assert.deepEqual(keysOf((await b.list(listOpts({ prefix: 'ns/' }))).items), ['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e', 'ns/f', 'ns/g']);
      } finally {
        release();
      }
    });

    it('decoding a big page lets other work run between slices (the event loop is not held for the whole page)', CASE, async () => {
      const prefix = freshPrefix();
      const client = connectEtcd({ hosts: [etcd.url] });
      // 9,000 llamas with 40 labels each (the last page 1,500 of them), written straight into etcd (128 puts per Txn).
      const labels = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`farm.example.com/label-${i}`, `value-${i}`]));
      const keys = await putLlamas(client, prefix, 9_000, { labels });
      // Ticks of a setImmediate loop, read when the list's last page arrived and when the cache was reset from it.
      let ticks = 0;
      let running = true;
      const tick = () => { ticks++; if (running) setImmediate(tick); };
      let atPage: number | undefined;
      let atReset: number | undefined;
      const timed: EtcdClient = { ...client, rangePage: async (req) => { const r = await client.rangePage(req); atPage = ticks; return r; } };
      const s = new Etcd3Storage({ client: timed, prefix, historyLimit: 1000 });
      open.push({ storage: s, client });
      s.view.onReset(() => { atReset = ticks; });
      tick();
      try {
        await s.start();
      } finally {
        running = false;
      }
      assert.equal(s.view.size, keys.length);
      assert.ok(atPage !== undefined && atReset !== undefined);
      // Decoding 1,500 such objects takes tens of ms: in 1 ms slices, others ran several times meanwhile.
      assert.ok(atReset - atPage >= 2, `${atReset - atPage} ticks while the page was decoded`);
    });

    it('a fill of several pages is one revision\'s state, and what changed between its pages comes by the watch', CASE, async () => {
      const prefix = freshPrefix();
      const client = connectEtcd({ hosts: [etcd.url] });
      // 20,005 small llamas: the fill's pages, 500 keys first and twice as many each time up to 10,000.
      await putLlamas(client, prefix, 20_005);
      // Once the first page is answered, a key of the last page is deleted and a new one written.
      const pages: { revision?: number; kvs: number }[] = [];
      const paged: EtcdClient = {
        ...client,
        rangePage: async (req) => {
          const r = await client.rangePage(req);
          pages.push({ revision: req.revision, kvs: r.kvs.length });
          if (pages.length === 1) {
            await client.txn({ success: [{ request_delete_range: { key: Buffer.from(`${prefix}/ns/l20004`) } }] });
            await client.txn({ success: [{ request_put: { key: Buffer.from(`${prefix}/ns/new`), value: Buffer.from(JSON.stringify(llama('ns/new'))) } }] });
          }
          return r;
        },
      };
      const s = new Etcd3Storage({ client: paged, prefix, historyLimit: 1000 });
      open.push({ storage: s, client });
      let atReset: { rv: number; size: number; deleted: boolean; added: boolean } | undefined;
      s.view.onReset(() => { atReset = { rv: s.view.resourceVersion, size: s.view.size, deleted: s.view.get('ns/l20004') === undefined, added: s.view.get('ns/new') !== undefined }; });
      await s.start();
      const first = pages[0];
      assert.deepEqual(pages.map((p) => p.kvs), [500, 1_000, 2_000, 4_000, 8_000, 4_505], 'six pages, one after another');
      assert.equal(first.revision, undefined, 'the first page at etcd\'s newest revision');
      assert.ok(atReset);
      assert.ok(pages.slice(1).every((p) => p.revision === atReset?.rv), 'the later pages at the first one\'s revision');
      assert.deepEqual(atReset, { rv: atReset.rv, size: 20_005, deleted: false, added: false }, 'the fill is the state at the first page');
      await eventually(() => s.view.get('ns/l20004') === undefined && s.view.get('ns/new') !== undefined, 'the two changes from the watch', 10_000);
      assert.equal(s.view.size, 20_005);
      assert.equal(s.view.resourceVersion, atReset.rv + 2);
    });

    it('a page etcd cannot send in one message is asked for again ten times smaller, and the later pages stay that small', CASE, async () => {
      const prefix = freshPrefix();
      const client = connectEtcd({ hosts: [etcd.url] });
      const keys = await putLlamas(client, prefix, 1_234);
      // As etcd refuses an answer past gRPC's 2 GiB bound, here for more than 120 objects.
      const asked: number[] = [];
      const bounded: EtcdClient = {
        ...client,
        rangePage: async (req) => {
          asked.push(Number(req.limit));
          if (Number(req.limit) > 120) throw new GrpcError(8, 'grpc: trying to send message larger than max (2147483648 vs. 2147483647)');
          return client.rangePage(req);
        },
      };
      const s = new Etcd3Storage({ client: bounded, prefix, historyLimit: 1000 });
      open.push({ storage: s, client });
      await s.start();
      assert.equal(s.view.size, keys.length);
      assert.deepEqual(asked, [500, ...Array.from({ length: 25 }, () => 50)], 'one refusal, then pages of 50');
    });

    it('a page another replica answered, ahead of this one\'s lagging cache, continues from etcd at once', CASE, async () => {
      const prefix = freshPrefix();
      const a = await replica(prefix);
      const client = connectEtcd({ hosts: [etcd.url] });
      // b's watch events arrive 3 s late: its cache stays behind a's writes for that long.
      const lagging: EtcdClient = { ...client, watchStream: () => laggingWatch(client, 3_000) };
      const b = new Etcd3Storage({ client: lagging, prefix, historyLimit: 1000 });
      open.push({ storage: b, client });
      await b.start();
      for (const key of ['ns/a', 'ns/b', 'ns/c']) await a.create(key, llama(key));
      const first = await a.list(listOpts({ prefix: 'ns/', limit: 1 }));
      assert.ok(first.resourceVersion > b.resourceVersion, 'b is behind the first page');
      const t0 = performance.now();
      const rest = await b.list(listOpts({ prefix: 'ns/', limit: 5, continue: first.continue }));
      assert.ok(performance.now() - t0 < 1_000, 'no wait for the lagging cache');
      assert.deepEqual(keysOf(rest.items), ['ns/b', 'ns/c']);
      assert.equal(rest.resourceVersion, first.resourceVersion);
    });

    it('a page from before the watch cache\'s window continues from etcd, as the cacher delegates it', CASE, async () => {
      const prefix = freshPrefix();
      const client = connectEtcd({ hosts: [etcd.url] });
      const s = new Etcd3Storage({ client, prefix, historyLimit: 2 });
      open.push({ storage: s, client });
      await s.start();
      for (const key of ['ns/a', 'ns/b', 'ns/c']) await s.create(key, llama(key));
      const first = await s.list(listOpts({ prefix: 'ns/', limit: 1 }));
      for (let i = 0; i < 6; i++) await increment(s, 'ns/a');
      await s.create('ns/d', llama('ns/d'));
      // Watches are not delegated: one from the first page's revision shows it is outside the cache's window.
      await rejectsWithCode(s.watch({ prefix: 'ns/', fromRV: first.resourceVersion, predicate: {}, capacity: 10 }), 'TooOld');
      const next = await s.list(listOpts({ prefix: 'ns/', limit: 5, continue: first.continue }));
      assert.deepEqual(keysOf(next.items), ['ns/b', 'ns/c']);
      assert.equal(next.resourceVersion, first.resourceVersion);
      assert.equal(next.continue, undefined);
    });
  });
});
