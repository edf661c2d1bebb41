// DELETE of a collection over HTTPS: every list option it accepts means what it means for a list
// (delete.go DeleteCollection decodes and validates ListOptions as a list does, store.go lists with them:
// one page when a limit is set). Generated query strings: the DELETE answers exactly what a GET with the
// same query answers, deletes exactly the objects that GET listed, and a refused request deletes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startTestServer, type Response, type TestServer } from '../helpers/testServer.js';

const coll = (ns: string) => `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`;
interface Item { metadata: { name: string; resourceVersion: string; deletionTimestamp?: string } }
interface List { kind: string; metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number }; items: Item[] }

let s: TestServer;
before(async () => { s = await startTestServer(); });
after(async () => { await s.close(); });

async function seed(ns: string, names: string[], labels: (n: string) => Record<string, string> = () => ({}), finalizers: (n: string) => string[] = () => []) {
  for (const name of names) {
    const r = await s.request('POST', coll(ns), { body: { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, labels: labels(name), finalizers: finalizers(name) }, spec: { weight: 1, height: 1 } } });
    assert.equal(r.status, 201, r.body);
  }
}
const names = async (ns: string) => (await s.request('GET', coll(ns))).json<List>().items.map((i) => i.metadata.name);

describe('deletecollection: the issue\'s cases', () => {
  it('limit=2 deletes one page of two and answers it with its continue token', async () => {
    await seed('dc-limit', ['a', 'b', 'c', 'd', 'e']);
    const r = await s.request('DELETE', `${coll('dc-limit')}?limit=2`);
    assert.equal(r.status, 200, r.body);
    const l = r.json<List>();
    assert.equal(l.kind, 'LlamaList');
    assert.deepEqual(l.items.map((i) => i.metadata.name), ['a', 'b']);
    assert.ok(l.metadata.continue, 'the page\'s continue token');
    assert.equal(l.metadata.remainingItemCount, 3);
    assert.deepEqual(await names('dc-limit'), ['c', 'd', 'e']);
    // The next page, from that token: the rest of the list as it was.
    const next = await s.request('DELETE', `${coll('dc-limit')}?limit=2&continue=${encodeURIComponent(l.metadata.continue!)}`);
    assert.equal(next.status, 200, next.body);
    assert.deepEqual(next.json<List>().items.map((i) => i.metadata.name), ['c', 'd']);
    assert.deepEqual(await names('dc-limit'), ['e']);
  });

  it('a garbage continue token is 400 invalid continue token, and nothing is deleted', async () => {
    await seed('dc-bad-continue', ['a', 'b']);
    const r = await s.request('DELETE', `${coll('dc-bad-continue')}?limit=1&continue=abc`);
    assert.equal(r.status, 400, r.body);
    assert.match(r.json<{ message: string }>().message, /^invalid continue token/);
    assert.deepEqual(await names('dc-bad-continue'), ['a', 'b']);
  });

  it('invalid resourceVersion or resourceVersionMatch is refused before anything is deleted', async () => {
    await seed('dc-bad-rv', ['a']);
    for (const q of ['resourceVersion=abc', 'resourceVersionMatch=Exact', 'resourceVersion=0&resourceVersionMatch=Exact', 'resourceVersionMatch=Bogus&resourceVersion=1', 'sendInitialEvents=true']) {
      const r = await s.request('DELETE', `${coll('dc-bad-rv')}?${q}`);
      assert.ok(r.status === 400 || r.status === 422, `${q} → ${r.status} ${r.body}`);
    }
    assert.deepEqual(await names('dc-bad-rv'), ['a']);
  });
});

describe('deletecollection: the answer as a Table', () => {
  const TABLE = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };
  interface TableRow { object: { kind: string; spec?: unknown } }

  it('embeds the objects as includeObject asks (Object: whole; None: not at all), as the GET of the list does', async () => {
    for (const includeObject of ['Object', 'None', 'Metadata']) {
      const ns = `dc-table-${includeObject.toLowerCase()}`;
      await seed(ns, ['a']);
      const got = await s.request('GET', `${coll(ns)}?includeObject=${includeObject}`, { headers: TABLE });
      const r = await s.request('DELETE', `${coll(ns)}?includeObject=${includeObject}`, { headers: TABLE });
      assert.equal(r.status, 200, r.body);
      const rows = r.json<{ rows: TableRow[] }>().rows;
      assert.deepEqual(rows.map((x) => x.object?.kind), got.json<{ rows: TableRow[] }>().rows.map((x) => x.object?.kind), includeObject);
      if (includeObject === 'Object') assert.ok(rows[0].object.spec, 'the whole object');
    }
  });

  it('an unsupported includeObject is 400 before anything is deleted, as for the DELETE of one object', async () => {
    await seed('dc-table-bogus', ['a']);
    const r = await s.request('DELETE', `${coll('dc-table-bogus')}?includeObject=Bogus`, { headers: TABLE });
    assert.equal(r.status, 400, r.body);
    assert.match(r.json<{ message: string }>().message, /includeObject=Bogus is not supported/);
    assert.deepEqual(await names('dc-table-bogus'), ['a']);
  });
});

/** One query parameter as a client might send it (valid or not). */
const param = fc.oneof(
  fc.constantFrom('limit=0', 'limit=1', 'limit=2', 'limit=3', 'limit=10', 'limit=-1', 'limit=x', 'limit=1&limit=2', 'limit=99999999999999999999'),
  fc.constantFrom('continue=abc', 'continue=', 'continue=CURRENT', 'continue=OLDER'),
  fc.constantFrom('labelSelector=app%3Dx', 'labelSelector=app!%3Dx', 'labelSelector=!app', 'labelSelector=app+in+(x,y)', 'labelSelector=app%3D%3D', 'labelSelector=a+b', 'labelSelector=app%3Dx&labelSelector=app%3Dy'),
  fc.constantFrom('fieldSelector=metadata.name%3Db', 'fieldSelector=metadata.name!%3Da', 'fieldSelector=spec.bogus%3D1', 'fieldSelector=metadata.name'),
  fc.constantFrom('resourceVersion=0', 'resourceVersion=CURRENT', 'resourceVersion=OLDER', 'resourceVersion=abc', 'resourceVersion=-1', 'resourceVersion='),
  fc.constantFrom('resourceVersionMatch=Exact', 'resourceVersionMatch=NotOlderThan', 'resourceVersionMatch=exact', 'resourceVersionMatch='),
  fc.constantFrom('timeoutSeconds=5', 'timeoutSeconds=x', 'sendInitialEvents=false', 'allowWatchBookmarks=true', 'includeObject=None', 'bogus=1'),
);

describe('deletecollection: generated list options', () => {
  it('answers what GET with the same query answers, deletes exactly what it listed, and nothing when refused', { timeout: 180_000 }, async () => {
    let run = 0;
    await fc.assert(fc.asyncProperty(
      fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 6 }), fc.array(param, { maxLength: 4 }), fc.boolean(), fc.integer({ min: 1, max: 3 }),
      async (members, params, dryRun, page) => {
        const ns = `dcp-${++run}`;
        const half = members.slice(0, Math.ceil(members.length / 2));
        const labels = (n: string): Record<string, string> => (n < 'c' ? { app: 'x' } : n < 'e' ? { app: 'y' } : {});
        const finalizers = (n: string) => (n === 'b' ? ['farm.example.com/keep'] : []);
        await seed(ns, half, labels, finalizers);
        const older = (await s.request('GET', `${coll(ns)}?limit=${page}`)).json<List>().metadata;
        await seed(ns, members.slice(half.length), labels, finalizers);
        const current = (await s.request('GET', `${coll(ns)}?limit=${page}`)).json<List>().metadata;
        const query = params.join('&')
          .replace(/CURRENT/g, (m, i: number, q: string) => encodeURIComponent(q.slice(0, i).endsWith('continue=') ? current.continue ?? 'none' : current.resourceVersion))
          .replace(/OLDER/g, (m, i: number, q: string) => encodeURIComponent(q.slice(0, i).endsWith('continue=') ? older.continue ?? 'none' : older.resourceVersion));
        const all = (await s.request('GET', coll(ns))).json<List>().items;
        const listed: Response = await s.request('GET', `${coll(ns)}?${query}`);
        const deleted: Response = await s.request('DELETE', `${coll(ns)}?${[query, dryRun ? 'dryRun=All' : ''].filter(Boolean).join('&')}`);
        assert.equal(deleted.status, listed.status, `DELETE ?${query}: ${deleted.body}\nGET: ${listed.body}`);
        assert.deepEqual(deleted.json(), listed.json(), `DELETE ?${query} answers as GET does`);
        assert.ok(listed.status === 200 || (listed.status >= 400 && listed.status < 500), `a client's mistake is a 4xx: ${listed.status}`);
        const gone = new Set(listed.status === 200 && !dryRun ? listed.json<List>().items.map((i) => i.metadata.name) : []);
        const now = new Map((await s.request('GET', coll(ns))).json<List>().items.map((i) => [i.metadata.name, i]));
        for (const i of all) {
          const n = i.metadata.name;
          if (!gone.has(n)) assert.equal(now.get(n)?.metadata.resourceVersion, i.metadata.resourceVersion, `${n} not listed: unchanged`);
          else if (n === 'b') assert.ok(now.get(n)?.metadata.deletionTimestamp, 'b is kept by its finalizer, marked');
          else assert.equal(now.get(n), undefined, `${n} listed: deleted`);
        }
      }), { seed: 20261129, numRuns: 150, endOnFailure: true, includeErrorInReport: true });
  });
});
