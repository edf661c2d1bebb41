// The llama REST verbs over real HTTPS, judged against kube-apiserver's behaviour for custom resources
// (k8s.io/apiserver handlers + generic registry, apiextensions-apiserver). Watches live in llama-watch.test.ts;
// one watch here only proves that dry runs emit nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type Response, type Stream, type TestServer } from '../helpers/testServer.js';

const API = '/apis/farm.example.com/v1alpha';
const coll = (ns: string) => `${API}/namespaces/${ns}/llamas`;
const B = coll('default');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const TABLE_V1 = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const TABLE_V1BETA1 = 'application/json;as=Table;v=v1beta1;g=meta.k8s.io';
const KUBECTL_GET_ACCEPT = `${TABLE_V1},${TABLE_V1BETA1},application/json`;
const CONFLICT = 'the object has been modified; please apply your changes to the latest version and try again';

type Obj = Record<string, any>;

/**
 * A watch stream's events in order. Reads the helper stream's `lines` itself, polling briefly: the helper's
 * next() leaves its wait timer running, which keeps the test process alive for the whole timeout.
 */
function events(w: Stream) {
  let read = 0;
  return async (timeoutMs = 5000): Promise<{ type: string; object: Obj }> => {
    const deadline = Date.now() + timeoutMs;
    while (read >= w.lines.length) {
      if (Date.now() > deadline) throw new Error(`no watch event within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
    return JSON.parse(w.lines[read++]);
  };
}

function llama(name: string, spec: Obj = { weight: 120, height: 1.7 }, metadata: Obj = {}): Obj {
  return { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name, ...metadata }, spec };
}

/** Every non-2xx answer is a metav1.Status with the given code and reason. */
function expectStatus(res: Response, code: number, reason: string, message?: string | RegExp): Obj {
  assert.equal(res.status, code, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const st = res.json();
  assert.equal(st.kind, 'Status', res.body);
  assert.equal(st.apiVersion, 'v1');
  assert.equal(st.status, 'Failure');
  assert.equal(st.code, code);
  assert.equal(st.reason, reason);
  if (typeof message === 'string') assert.equal(st.message, message);
  else if (message) assert.match(st.message, message);
  return st;
}

describe('llama REST verbs', () => {
  let s: TestServer;

  before(async () => { s = await startTestServer(); });
  after(async () => { await s.close(); });

  const create = async (path: string, body: Obj): Promise<Obj> => {
    const r = await s.request('POST', path, { body });
    assert.equal(r.status, 201, r.body);
    return r.json();
  };
  const get = (path: string, accept?: string) => s.request('GET', path, accept ? { headers: { accept } } : {});
  const listRV = async (path = B): Promise<string> => {
    const r = await get(path);
    assert.equal(r.status, 200, r.body);
    return r.json().metadata.resourceVersion;
  };
  const names = (list: Obj) => (list.items as Obj[]).map((i) => i.metadata.name);
  const mergePatch = (path: string, patch: unknown) => s.request('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  /** The helper's request() leaves a DELETE body unframed; a real client (Go) sends Content-Length. */
  const del = (path: string, body?: unknown, contentType = 'application/json') => {
    if (body === undefined) return s.request('DELETE', path);
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    return s.request('DELETE', path, { body: payload, contentType, headers: { 'content-length': String(Buffer.byteLength(payload)) } });
  };

  describe('create', () => {
    it('answers 201 with server-owned metadata and defaults applied', async () => {
      const before = Number(await listRV());
      const r = await s.request('POST', B, { body: llama('dolly', { weight: 120, height: 1.7 }, { labels: { app: 'farm' } }) });
      assert.equal(r.status, 201, r.body);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      const o = r.json();
      assert.equal(o.apiVersion, 'farm.example.com/v1alpha');
      assert.equal(o.kind, 'Llama');
      assert.equal(o.metadata.name, 'dolly');
      assert.equal(o.metadata.namespace, 'default');
      assert.deepEqual(o.metadata.labels, { app: 'farm' });
      assert.match(o.metadata.uid, UUID);
      assert.match(o.metadata.creationTimestamp, RFC3339_SECONDS);
      assert.ok(Math.abs(Date.parse(o.metadata.creationTimestamp) - Date.now()) < 3_600_000, 'creationTimestamp is the server clock');
      assert.match(o.metadata.resourceVersion, /^[1-9]\d*$/);
      assert.ok(Number(o.metadata.resourceVersion) > before);
      assert.equal(o.metadata.generation, 1);
      assert.deepEqual(o.spec, { weight: 120, height: 1.7, color: 'white', shorn: false });
      // What was stored is what was answered; the list RV moved to the create's RV.
      const g = await get(`${B}/dolly`);
      assert.equal(g.status, 200);
      assert.deepEqual(g.json(), o);
      assert.equal(await listRV(), o.metadata.resourceVersion);
    });

    it('gives each write a larger integer resourceVersion and each object its own uid', async () => {
      const a = await create(B, llama('rv-a'));
      const b = await create(B, llama('rv-b'));
      assert.ok(Number(b.metadata.resourceVersion) > Number(a.metadata.resourceVersion));
      assert.notEqual(a.metadata.uid, b.metadata.uid);
    });

    it('ignores a client-sent uid, creationTimestamp, generation and deletionTimestamp', async () => {
      const o = await create(B, llama('forged', undefined, {
        uid: '11111111-2222-3333-4444-555555555555', creationTimestamp: '2001-02-03T04:05:06Z', generation: 9, deletionTimestamp: '2001-02-03T04:05:06Z',
      }));
      assert.notEqual(o.metadata.uid, '11111111-2222-3333-4444-555555555555');
      assert.match(o.metadata.uid, UUID);
      assert.notEqual(o.metadata.creationTimestamp, '2001-02-03T04:05:06Z');
      assert.match(o.metadata.creationTimestamp, RFC3339_SECONDS);
      assert.equal(o.metadata.generation, 1);
      assert.equal(o.metadata.deletionTimestamp, undefined);
    });

    it('ignores a client-sent resourceVersion (contract §7; an etcd-backed kube-apiserver refuses it instead)', async () => {
      const o = await create(B, llama('forged-rv', undefined, { resourceVersion: '999999' }));
      assert.notEqual(o.metadata.resourceVersion, '999999');
      assert.equal(o.metadata.resourceVersion, await listRV());
    });

    it('generates a name from generateName: the prefix plus 5 characters of the name generator alphabet', async () => {
      const o = await create(B, { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { generateName: 'cria-' }, spec: { weight: 20, height: 0.8 } });
      assert.match(o.metadata.name, /^cria-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      assert.equal(o.metadata.generateName, 'cria-');
      assert.equal((await get(`${B}/${o.metadata.name}`)).status, 200);
    });

    it('refuses a duplicate name with 409 AlreadyExists', async () => {
      const st = expectStatus(await s.request('POST', B, { body: llama('dolly') }), 409, 'AlreadyExists', 'llamas.farm.example.com "dolly" already exists');
      assert.deepEqual(st.details, { name: 'dolly', group: 'farm.example.com', kind: 'llamas' });
    });

    it('accepts a YAML body (application/yaml)', async () => {
      const yaml = 'apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: yammy\nspec:\n  weight: 80\n  height: 1.2\n  color: brown\n';
      const r = await s.request('POST', B, { body: yaml, contentType: 'application/yaml' });
      assert.equal(r.status, 201, r.body);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      const o = r.json();
      assert.equal(o.metadata.name, 'yammy');
      assert.deepEqual(o.spec, { weight: 80, height: 1.2, color: 'brown', shorn: false });
    });

    it('treats unknown fields per fieldValidation: Warn warns and drops, Ignore drops silently, default is Warn', async () => {
      const warn = await s.request('POST', `${B}?fieldValidation=Warn`, { body: llama('warned', { weight: 1, height: 1, foo: 'bar' }) });
      assert.equal(warn.status, 201, warn.body);
      assert.equal(warn.headers.warning, '299 - "unknown field \\"spec.foo\\""');
      assert.equal(warn.json().spec.foo, undefined);
      assert.equal((await get(`${B}/warned`)).json().spec.foo, undefined);

      const ignore = await s.request('POST', `${B}?fieldValidation=Ignore`, { body: llama('ignored', { weight: 1, height: 1, foo: 'bar' }) });
      assert.equal(ignore.status, 201, ignore.body);
      assert.equal(ignore.headers.warning, undefined);
      assert.equal(ignore.json().spec.foo, undefined);
      assert.equal((await get(`${B}/ignored`)).json().spec.foo, undefined);

      const dflt = await s.request('POST', B, { body: llama('defaulted-warn', { weight: 1, height: 1, foo: 'bar' }) });
      assert.equal(dflt.status, 201, dflt.body);
      assert.equal(dflt.headers.warning, '299 - "unknown field \\"spec.foo\\""');
      assert.equal(dflt.json().spec.foo, undefined);
    });

    describe('refusals store nothing', () => {
      let rv0: string;
      before(async () => { rv0 = await listRV(); });
      after(async () => {
        assert.equal(await listRV(), rv0, 'a refused write must not advance the resourceVersion');
        const stored = names((await get(B)).json());
        for (const n of ['no-weight', 'pink', 'negative', 'strict', 'elsewhere', 'wrong-version', 'wrong-kind', 'huge']) {
          assert.ok(!stored.includes(n), `${n} was stored`);
        }
      });

      const invalid = async (body: Obj, name: string, field: string, cause: string, message?: string) => {
        const st = expectStatus(await s.request('POST', B, { body }), 422, 'Invalid', message);
        assert.equal(st.details.name, name);
        assert.equal(st.details.group, 'farm.example.com');
        assert.equal(st.details.kind, 'Llama');
        const c = (st.details.causes as Obj[]).find((x) => x.field === field);
        assert.ok(c, `a cause for ${field}: ${JSON.stringify(st.details.causes)}`);
        assert.equal(c.reason, cause);
        return st;
      };

      it('422 Invalid for a missing spec.weight', async () => {
        await invalid(llama('no-weight', { height: 1 }), 'no-weight', 'spec.weight', 'FieldValueRequired',
          'Llama.farm.example.com "no-weight" is invalid: spec.weight: Required value');
      });

      it('422 Invalid for a colour outside the enum', async () => {
        await invalid(llama('pink', { weight: 1, height: 1, color: 'pink' }), 'pink', 'spec.color', 'FieldValueNotSupported',
          'Llama.farm.example.com "pink" is invalid: spec.color: Unsupported value: "pink": supported values: "white", "brown", "black", "grey", "spotted"');
      });

      it('422 Invalid for a negative height', async () => {
        await invalid(llama('negative', { weight: 1, height: -1 }), 'negative', 'spec.height', 'FieldValueInvalid',
          'Llama.farm.example.com "negative" is invalid: spec.height: Invalid value: -1: spec.height in body should be greater than 0');
      });

      it('422 Invalid for a name that is not a DNS subdomain', async () => {
        const st = await invalid(llama('Bad_Name'), 'Bad_Name', 'metadata.name', 'FieldValueInvalid');
        assert.match(st.message, /^Llama\.farm\.example\.com "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
      });

      it('422 Invalid when neither name nor generateName is given', async () => {
        const st = expectStatus(await s.request('POST', B, { body: { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: {}, spec: { weight: 1, height: 1 } } }), 422, 'Invalid');
        assert.ok((st.details.causes as Obj[]).some((c) => c.field === 'metadata.name' && c.reason === 'FieldValueRequired'));
      });

      it('400 with a strict decoding error for an unknown field under fieldValidation=Strict', async () => {
        expectStatus(await s.request('POST', `${B}?fieldValidation=Strict`, { body: llama('strict', { weight: 1, height: 1, foo: 'bar' }) }), 400, 'BadRequest',
          'Llama in version "v1alpha" cannot be handled as a Llama: strict decoding error: unknown field "spec.foo"');
      });

      it('422 for an unsupported fieldValidation value', async () => {
        const st = expectStatus(await s.request('POST', `${B}?fieldValidation=Loud`, { body: llama('strict') }), 422, 'Invalid');
        assert.equal(st.details.kind, 'CreateOptions');
        assert.equal(st.details.group, 'meta.k8s.io');
      });

      it('400 when the body names another namespace', async () => {
        expectStatus(await s.request('POST', B, { body: llama('elsewhere', undefined, { namespace: 'other' }) }), 400, 'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request');
      });

      it('400 for a wrong apiVersion or kind', async () => {
        expectStatus(await s.request('POST', B, { body: { ...llama('wrong-version'), apiVersion: 'farm.example.com/v1' } }), 400, 'BadRequest',
          'the API version in the data (farm.example.com/v1) does not match the expected API version (farm.example.com/v1alpha)');
        expectStatus(await s.request('POST', B, { body: { ...llama('wrong-kind'), kind: 'Alpaca' } }), 400, 'BadRequest', /Alpaca/);
      });

      it('400 for malformed JSON and for a body that is not an object', async () => {
        expectStatus(await s.request('POST', B, { body: '{"apiVersion": "farm.example.com/v1alpha", "kind": ' }), 400, 'BadRequest');
        expectStatus(await s.request('POST', B, { body: '[1, 2, 3]' }), 400, 'BadRequest');
      });

      it('413 for a body over 3 MiB', async () => {
        const body = JSON.stringify(llama('huge', { weight: 1, height: 1 }, { annotations: { filler: 'x'.repeat(3 * 1024 * 1024) } }));
        expectStatus(await s.request('POST', B, { body }), 413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
      });

      it('422 CreateOptions for dryRun other than All', async () => {
        const st = expectStatus(await s.request('POST', `${B}?dryRun=foo`, { body: llama('strict') }), 422, 'Invalid',
          'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"foo"}: supported values: "All"');
        assert.deepEqual(st.details, {
          group: 'meta.k8s.io', kind: 'CreateOptions',
          causes: [{ reason: 'FieldValueNotSupported', message: 'Unsupported value: []string{"foo"}: supported values: "All"', field: 'dryRun' }],
        });
      });
    });
  });

  describe('get and routing', () => {
    it('200 for an existing object', async () => {
      const r = await get(`${B}/dolly`);
      assert.equal(r.status, 200);
      assert.equal(r.json().metadata.name, 'dolly');
    });

    it('404 NotFound Status naming the group-qualified resource', async () => {
      const st = expectStatus(await get(`${B}/x`), 404, 'NotFound', 'llamas.farm.example.com "x" not found');
      assert.deepEqual(st.details, { name: 'x', group: 'farm.example.com', kind: 'llamas' });
    });

    it('404 Status for an unknown path', async () => {
      expectStatus(await get(`${API}/namespaces/default/alpacas`), 404, 'NotFound', 'the server could not find the requested resource');
      expectStatus(await get('/apis/farm.example.com/v9/llamas'), 404, 'NotFound');
    });

    it('405 Status for PUT on the collection', async () => {
      expectStatus(await s.request('PUT', B, { body: llama('dolly') }), 405, 'MethodNotAllowed');
    });

    it('406 Status for a protobuf-only Accept; JSON when protobuf comes first with JSON as an alternative', async () => {
      expectStatus(await get(`${B}/dolly`, 'application/vnd.kubernetes.protobuf'), 406, 'NotAcceptable', /^only the following media types are accepted: .*application\/json/);
      expectStatus(await get(B, 'application/vnd.kubernetes.protobuf'), 406, 'NotAcceptable');
      const r = await get(`${B}/dolly`, 'application/vnd.kubernetes.protobuf,application/json');
      assert.equal(r.status, 200);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.equal(r.json().kind, 'Llama');
      const l = await get(B, 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json');
      assert.equal(l.status, 200);
      assert.equal(l.json().kind, 'PartialObjectMetadataList');
    });

    it('answers YAML when asked for application/yaml', async () => {
      const r = await get(`${B}/dolly`, 'application/yaml');
      assert.equal(r.status, 200);
      assert.match(String(r.headers['content-type']), /^application\/yaml/);
      assert.match(r.body, /^apiVersion: farm\.example\.com\/v1alpha$/m);
      assert.match(r.body, /^ {2}name: dolly$/m);
    });
  });

  describe('update (PUT)', () => {
    it('bumps generation on a spec change, keeps uid and creationTimestamp, advances resourceVersion', async () => {
      const cur = await create(B, llama('putter', { weight: 100, height: 1.5 }));
      const r = await s.request('PUT', `${B}/putter`, { body: { ...cur, spec: { ...cur.spec, color: 'black' } } });
      assert.equal(r.status, 200, r.body);
      const o = r.json();
      assert.equal(o.spec.color, 'black');
      assert.equal(o.metadata.generation, 2);
      assert.equal(o.metadata.uid, cur.metadata.uid);
      assert.equal(o.metadata.creationTimestamp, cur.metadata.creationTimestamp);
      assert.ok(Number(o.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
      assert.deepEqual((await get(`${B}/putter`)).json(), o);
    });

    it('keeps generation on a label-only change, and keeps server fields a client tries to change', async () => {
      const cur = (await get(`${B}/putter`)).json();
      const body = { ...cur, metadata: { ...cur.metadata, labels: { shorn: 'soon' }, creationTimestamp: '2001-01-01T00:00:00Z', generation: 42 } };
      const r = await s.request('PUT', `${B}/putter`, { body });
      assert.equal(r.status, 200, r.body);
      const o = r.json();
      assert.deepEqual(o.metadata.labels, { shorn: 'soon' });
      assert.equal(o.metadata.generation, cur.metadata.generation);
      assert.equal(o.metadata.creationTimestamp, cur.metadata.creationTimestamp);
      assert.ok(Number(o.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
    });

    it('treats a PUT that changes nothing as a no-op: same resourceVersion, nothing written', async () => {
      const cur = (await get(`${B}/putter`)).json();
      const rv0 = await listRV();
      const r = await s.request('PUT', `${B}/putter`, { body: cur });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.json().metadata.resourceVersion, cur.metadata.resourceVersion);
      assert.equal(await listRV(), rv0);
    });

    describe('refusals store nothing', () => {
      let rv0: string;
      let cur: Obj;
      before(async () => { cur = (await get(`${B}/putter`)).json(); rv0 = await listRV(); });
      after(async () => {
        assert.equal(await listRV(), rv0);
        assert.deepEqual((await get(`${B}/putter`)).json(), cur);
      });

      it('409 Conflict for a stale resourceVersion', async () => {
        const st = expectStatus(await s.request('PUT', `${B}/putter`, { body: { ...cur, metadata: { ...cur.metadata, resourceVersion: '1' }, spec: { ...cur.spec, weight: 1 } } }),
          409, 'Conflict', `Operation cannot be fulfilled on llamas.farm.example.com "putter": ${CONFLICT}`);
        assert.deepEqual(st.details, { name: 'putter', group: 'farm.example.com', kind: 'llamas' });
      });

      it('422 when resourceVersion is missing (custom resources allow no unconditional update)', async () => {
        const { resourceVersion: _, ...meta } = cur.metadata;
        const st = expectStatus(await s.request('PUT', `${B}/putter`, { body: { ...cur, metadata: meta, spec: { ...cur.spec, weight: 1 } } }), 422, 'Invalid',
          'llamas.farm.example.com "putter" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
        assert.deepEqual(st.details, {
          name: 'putter', group: 'farm.example.com', kind: 'llamas',
          causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' }],
        });
      });

      it('400 when the body names another object than the URL', async () => {
        expectStatus(await s.request('PUT', `${B}/putter`, { body: { ...cur, metadata: { ...cur.metadata, name: 'other' } } }), 400, 'BadRequest',
          'the name of the object (other) does not match the name on the URL (putter)');
      });

      it('422 for an invalid spec, 400 for an unknown field under Strict', async () => {
        const st = expectStatus(await s.request('PUT', `${B}/putter`, { body: { ...cur, spec: { ...cur.spec, weight: -5 } } }), 422, 'Invalid');
        assert.equal(st.details.causes[0].field, 'spec.weight');
        expectStatus(await s.request('PUT', `${B}/putter?fieldValidation=Strict`, { body: { ...cur, spec: { ...cur.spec, foo: 1 } } }), 400, 'BadRequest',
          'Llama in version "v1alpha" cannot be handled as a Llama: strict decoding error: unknown field "spec.foo"');
      });

      it('404 for an object that does not exist (no create on update), even without resourceVersion', async () => {
        expectStatus(await s.request('PUT', `${B}/ghost`, { body: llama('ghost') }), 404, 'NotFound', 'llamas.farm.example.com "ghost" not found');
        expectStatus(await s.request('PUT', `${B}/ghost`, { body: llama('ghost', undefined, { resourceVersion: '5' }) }), 404, 'NotFound');
      });
    });
  });

  describe('patch', () => {
    let base: Obj;
    before(async () => { base = await create(B, llama('patchy', { weight: 100, height: 1.5 }, { labels: { app: 'farm' } })); });

    it('applies a merge patch: spec change bumps generation, null removes a key', async () => {
      const r = await mergePatch(`${B}/patchy`, { metadata: { labels: { app: null, coat: 'thick' } }, spec: { color: 'grey' } });
      assert.equal(r.status, 200, r.body);
      const o = r.json();
      assert.equal(o.spec.color, 'grey');
      assert.equal(o.spec.weight, 100);
      assert.deepEqual(o.metadata.labels, { coat: 'thick' });
      assert.equal(o.metadata.generation, 2);
      assert.equal(o.metadata.uid, base.metadata.uid);
      assert.ok(Number(o.metadata.resourceVersion) > Number(base.metadata.resourceVersion));
      assert.deepEqual((await get(`${B}/patchy`)).json(), o);
    });

    it('applies a JSON patch, including a passing test op', async () => {
      const r = await s.request('PATCH', `${B}/patchy`, {
        body: [{ op: 'test', path: '/spec/color', value: 'grey' }, { op: 'replace', path: '/spec/weight', value: 110 }, { op: 'add', path: '/spec/favoriteFood', value: 'hay' }],
        contentType: 'application/json-patch+json',
      });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.json().spec.weight, 110);
      assert.equal(r.json().spec.favoriteFood, 'hay');
    });

    it('treats a merge patch that changes nothing as a no-op', async () => {
      const cur = (await get(`${B}/patchy`)).json();
      const r = await mergePatch(`${B}/patchy`, {});
      assert.equal(r.status, 200, r.body);
      assert.equal(r.json().metadata.resourceVersion, cur.metadata.resourceVersion);
    });

    describe('refusals store nothing', () => {
      let rv0: string;
      let cur: Obj;
      before(async () => { cur = (await get(`${B}/patchy`)).json(); rv0 = await listRV(); });
      after(async () => {
        assert.equal(await listRV(), rv0);
        assert.deepEqual((await get(`${B}/patchy`)).json(), cur);
      });

      it('422 (not a 5xx) when a JSON patch test op fails, as the patch handler does', async () => {
        expectStatus(await s.request('PATCH', `${B}/patchy`, {
          body: [{ op: 'test', path: '/spec/color', value: 'black' }, { op: 'replace', path: '/spec/weight', value: 1 }],
          contentType: 'application/json-patch+json',
        }), 422, 'Invalid');
      });

      it('415 listing the accepted patch types for a strategic merge patch', async () => {
        const st = expectStatus(await s.request('PATCH', `${B}/patchy`, { body: { spec: { weight: 1 } }, contentType: 'application/strategic-merge-patch+json' }),
          415, 'UnsupportedMediaType', /^the body of the request was in an unknown format - accepted media types include: /);
        assert.match(st.message, /application\/json-patch\+json/);
        assert.match(st.message, /application\/merge-patch\+json/);
        assert.doesNotMatch(st.message, /strategic-merge-patch/);
      });

      it('422 PatchOptions for an apply patch without fieldManager', async () => {
        expectStatus(await s.request('PATCH', `${B}/patchy`, { body: llama('patchy'), contentType: 'application/apply-patch+yaml' }),
          422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
      });

      it('404 for a missing object', async () => {
        expectStatus(await mergePatch(`${B}/nobody`, { spec: { weight: 1 } }), 404, 'NotFound', 'llamas.farm.example.com "nobody" not found');
      });

      it('400 for a patch that renames the object', async () => {
        expectStatus(await mergePatch(`${B}/patchy`, { metadata: { name: 'renamed' } }), 400, 'BadRequest',
          'the name of the object (renamed) does not match the name on the URL (patchy)');
      });

      it('409 Conflict for a patch carrying a stale metadata.resourceVersion', async () => {
        expectStatus(await mergePatch(`${B}/patchy`, { metadata: { resourceVersion: '1' }, spec: { weight: 1 } }), 409, 'Conflict',
          `Operation cannot be fulfilled on llamas.farm.example.com "patchy": ${CONFLICT}`);
      });

      it('422 for a patch that makes the object invalid', async () => {
        const st = expectStatus(await mergePatch(`${B}/patchy`, { spec: { color: 'pink' } }), 422, 'Invalid');
        assert.equal(st.details.causes[0].field, 'spec.color');
      });

      it('422 PatchOptions for force on a non-apply patch', async () => {
        const st = expectStatus(await s.request('PATCH', `${B}/patchy?force=true`, { body: { spec: { weight: 1 } }, contentType: 'application/merge-patch+json' }), 422, 'Invalid');
        assert.equal(st.details.kind, 'PatchOptions');
      });
    });
  });

  describe('dryRun=All', () => {
    it('answers create/update/patch/delete as if done, stores nothing and emits no watch event', async () => {
      const base = await create(B, llama('dry', { weight: 50, height: 1 }));
      const rv0 = await listRV();
      const w = await s.stream(`${B}?watch=true&resourceVersion=${rv0}`);
      const nextEvent = events(w);
      try {
        const c = await s.request('POST', `${B}?dryRun=All`, { body: llama('dry-new') });
        assert.equal(c.status, 201, c.body);
        assert.equal(c.json().metadata.name, 'dry-new');
        assert.match(c.json().metadata.uid, UUID);
        assert.equal(c.json().metadata.generation, 1);
        assert.equal(c.json().metadata.resourceVersion, undefined, 'nothing was stored, so there is no resourceVersion');
        expectStatus(await get(`${B}/dry-new`), 404, 'NotFound');
        // The dry run still checks existence.
        expectStatus(await s.request('POST', `${B}?dryRun=All`, { body: llama('dry') }), 409, 'AlreadyExists');

        const u = await s.request('PUT', `${B}/dry?dryRun=All`, { body: { ...base, spec: { ...base.spec, color: 'black' } } });
        assert.equal(u.status, 200, u.body);
        assert.equal(u.json().spec.color, 'black');
        assert.equal(u.json().metadata.generation, 2);
        assert.equal(u.json().metadata.resourceVersion, base.metadata.resourceVersion);

        const p = await mergePatch(`${B}/dry?dryRun=All`, { spec: { weight: 7 } });
        assert.equal(p.status, 200, p.body);
        assert.equal(p.json().spec.weight, 7);

        const d = await del(`${B}/dry?dryRun=All`);
        assert.equal(d.status, 200, d.body);
        assert.equal(d.json().metadata.name, 'dry');

        const dd = await del(`${B}/dry`, { kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] });
        assert.equal(dd.status, 200, dd.body);

        assert.deepEqual((await get(`${B}/dry`)).json(), base);
        assert.equal(await listRV(), rv0);

        // Events arrive in resourceVersion order, so if the first event is this real write's, no dry run emitted one.
        const real = await create(B, llama('dry-marker'));
        const ev = await nextEvent();
        assert.equal(ev.type, 'ADDED');
        assert.equal(ev.object.metadata.name, 'dry-marker');
        assert.equal(ev.object.metadata.resourceVersion, real.metadata.resourceVersion);
      } finally {
        w.close();
      }
    });

    it('422 DeleteOptions for dryRun other than All', async () => {
      expectStatus(await del(`${B}/dolly?dryRun=foo`), 422, 'Invalid',
        'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"foo"}: supported values: "All"');
      assert.equal((await get(`${B}/dolly`)).status, 200);
    });
  });

  describe('delete', () => {
    it('200 with the deleted object; it is gone afterwards', async () => {
      const o = await create(B, llama('goner'));
      const r = await del(`${B}/goner`);
      assert.equal(r.status, 200, r.body);
      const d = r.json();
      assert.equal(d.kind, 'Llama');
      assert.equal(d.metadata.name, 'goner');
      assert.equal(d.metadata.uid, o.metadata.uid);
      expectStatus(await get(`${B}/goner`), 404, 'NotFound');
      expectStatus(await del(`${B}/goner`), 404, 'NotFound', 'llamas.farm.example.com "goner" not found');
    });

    it('with finalizers: marks it deleting (200, object kept), repeats idempotently, and removing the finalizers deletes it', async () => {
      const o = await create(B, llama('keeper', undefined, { finalizers: ['farm.example.com/shear'] }));
      const w = await s.stream(`${B}?watch=true&resourceVersion=${o.metadata.resourceVersion}`);
      const nextEvent = events(w);
      try {
        // handlers.DeleteResource answers 202 only for orphanDependents=false; otherwise 200 even when the object stays.
        const r1 = await del(`${B}/keeper`, { propagationPolicy: 'Background' });
        assert.equal(r1.status, 200, r1.body);
        const d1 = r1.json();
        assert.match(d1.metadata.deletionTimestamp, RFC3339_SECONDS);
        assert.equal(d1.metadata.deletionGracePeriodSeconds, 0);
        assert.deepEqual(d1.metadata.finalizers, ['farm.example.com/shear']);
        assert.equal(d1.metadata.generation, 2, 'markAsDeleting bumps generation with the first deletionTimestamp');
        assert.ok(Number(d1.metadata.resourceVersion) > Number(o.metadata.resourceVersion));
        assert.deepEqual((await get(`${B}/keeper`)).json(), d1);

        const r2 = await del(`${B}/keeper`);
        assert.equal(r2.status, 200, r2.body);
        assert.deepEqual(r2.json(), d1, 'a second delete changes nothing');
        assert.equal(await listRV(), d1.metadata.resourceVersion);

        // No new finalizers on an object being deleted.
        expectStatus(await mergePatch(`${B}/keeper`, { metadata: { finalizers: ['farm.example.com/shear', 'farm.example.com/more'] } }), 422, 'Invalid');

        const p = await mergePatch(`${B}/keeper`, { metadata: { finalizers: null } });
        assert.equal(p.status, 200, p.body);
        expectStatus(await get(`${B}/keeper`), 404, 'NotFound');

        const e1 = await nextEvent();
        assert.equal(e1.type, 'MODIFIED');
        assert.equal(e1.object.metadata.resourceVersion, d1.metadata.resourceVersion);
        assert.equal(e1.object.metadata.deletionTimestamp, d1.metadata.deletionTimestamp);
        const e2 = await nextEvent();
        assert.equal(e2.type, 'DELETED', 'the repeated delete and the refused patch emitted nothing');
        assert.equal(e2.object.metadata.name, 'keeper');
        assert.ok(Number(e2.object.metadata.resourceVersion) > Number(d1.metadata.resourceVersion));
        assert.equal(await listRV(), e2.object.metadata.resourceVersion);
      } finally {
        w.close();
      }
    });

    it('202 when orphanDependents=false and the object is not deleted yet', async () => {
      await create(B, llama('orphaner', undefined, { finalizers: ['farm.example.com/shear'] }));
      const r = await del(`${B}/orphaner`, { orphanDependents: false });
      assert.equal(r.status, 202, r.body);
      assert.ok(r.json().metadata.deletionTimestamp);
      assert.equal((await mergePatch(`${B}/orphaner`, { metadata: { finalizers: [] } })).status, 200);
      expectStatus(await get(`${B}/orphaner`), 404, 'NotFound');
    });

    it('409 Conflict for a uid or resourceVersion precondition that does not match; deletes when they match', async () => {
      const o = await create(B, llama('pre'));
      const rv0 = await listRV();
      const uid = expectStatus(await del(`${B}/pre`, { preconditions: { uid: 'not-the-uid' } }), 409, 'Conflict',
        `Operation cannot be fulfilled on Llama.farm.example.com "pre": the UID in the precondition (not-the-uid) does not match the UID in record (${o.metadata.uid}). The object might have been deleted and then recreated`);
      assert.deepEqual(uid.details, { name: 'pre', group: 'farm.example.com', kind: 'Llama' });
      expectStatus(await del(`${B}/pre`, { preconditions: { resourceVersion: '1' } }), 409, 'Conflict',
        `Operation cannot be fulfilled on Llama.farm.example.com "pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (${o.metadata.resourceVersion}). The object might have been modified`);
      assert.equal(await listRV(), rv0);
      assert.equal((await get(`${B}/pre`)).status, 200);
      const ok = await del(`${B}/pre`, { preconditions: { uid: o.metadata.uid, resourceVersion: o.metadata.resourceVersion } });
      assert.equal(ok.status, 200, ok.body);
      expectStatus(await get(`${B}/pre`), 404, 'NotFound');
    });

    it('422 DeleteOptions for an unknown propagationPolicy; the object stays', async () => {
      await create(B, llama('propagated'));
      const st = expectStatus(await del(`${B}/propagated`, { propagationPolicy: 'Sideways' }), 422, 'Invalid',
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"');
      assert.equal(st.details.kind, 'DeleteOptions');
      assert.equal(st.details.group, 'meta.k8s.io');
      assert.equal((await get(`${B}/propagated`)).status, 200);
      expectStatus(await del(`${B}/propagated?propagationPolicy=Sideways`), 422, 'Invalid');
      expectStatus(await del(`${B}/propagated`, { propagationPolicy: 'Background', orphanDependents: true }), 422, 'Invalid');
      assert.equal((await get(`${B}/propagated`)).status, 200);
    });

    it('accepts the namespace controller\'s body {"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}', async () => {
      await create(B, llama('nsctl'));
      const r = await del(`${B}/nsctl`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' });
      assert.equal(r.status, 200, r.body);
      expectStatus(await get(`${B}/nsctl`), 404, 'NotFound');
    });

    it('accepts kubectl\'s body {"propagationPolicy":"Background"} and an empty body sent as application/json', async () => {
      await create(B, llama('kubectl-del'));
      const r = await del(`${B}/kubectl-del`, { propagationPolicy: 'Background' });
      assert.equal(r.status, 200, r.body);
      await create(B, llama('empty-del'));
      const e = await del(`${B}/empty-del`, '');
      assert.equal(e.status, 200, e.body);
      assert.equal(e.json().metadata.name, 'empty-del');
      expectStatus(await get(`${B}/empty-del`), 404, 'NotFound');
    });

    it('deletecollection with a labelSelector deletes only the matching objects', async () => {
      const C = coll('dc');
      for (const [n, app] of [['dc-1', 'x'], ['dc-2', 'y'], ['dc-3', 'x'], ['dc-4', 'y']]) await create(C, llama(n, undefined, { labels: { app } }));
      await create(B, llama('dc-other-ns', undefined, { labels: { app: 'x' } }));
      const r = await del(`${C}?labelSelector=app%3Dx`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' });
      assert.equal(r.status, 200, r.body);
      const out = r.json();
      assert.equal(out.kind, 'LlamaList');
      assert.deepEqual(names(out).sort(), ['dc-1', 'dc-3']);
      assert.deepEqual(names((await get(C)).json()), ['dc-2', 'dc-4']);
      assert.equal((await get(`${B}/dc-other-ns`)).status, 200, 'another namespace is untouched');
    });
  });

  describe('list', () => {
    before(async () => {
      for (const [ns, n, labels] of [
        ['list-a', 'ann', { app: 'farm', env: 'prod' }],
        ['list-a', 'bob', { app: 'farm', env: 'dev' }],
        ['list-a', 'cid', { app: 'zoo' }],
        ['list-b', 'ann', { app: 'farm', env: 'prod' }],
        ['list-b', 'dot', { tier: 'x' }],
      ] as const) {
        await create(coll(ns), llama(n, { weight: 10, height: 1, color: n === 'bob' ? 'brown' : 'white' }, { labels }));
      }
    });

    const listNames = async (path: string): Promise<string[]> => {
      const r = await get(path);
      assert.equal(r.status, 200, r.body);
      const l = r.json();
      assert.equal(l.kind, 'LlamaList');
      assert.equal(l.apiVersion, 'farm.example.com/v1alpha');
      assert.match(l.metadata.resourceVersion, /^\d+$/);
      for (const i of l.items) { assert.equal(i.kind, 'Llama'); assert.equal(i.apiVersion, 'farm.example.com/v1alpha'); }
      return (l.items as Obj[]).map((i) => `${i.metadata.namespace}/${i.metadata.name}`);
    };

    it('lists one namespace, or all namespaces in key order', async () => {
      assert.deepEqual(await listNames(coll('list-a')), ['list-a/ann', 'list-a/bob', 'list-a/cid']);
      const all = await listNames(`${API}/llamas`);
      assert.ok(all.includes('list-b/dot') && all.includes('list-a/ann') && all.includes('default/dolly'));
      assert.deepEqual(all, [...all].sort(), 'sorted by namespace/name');
      const l = (await get(coll('list-a'))).json();
      assert.equal(l.metadata.continue, undefined);
      assert.equal(l.metadata.remainingItemCount, undefined);
      assert.deepEqual(await listNames(coll('no-such-namespace')), []);
    });

    it('filters by label selectors: =, ==, !=, in, notin, exists, !exists, and combinations', async () => {
      const sel = (q: string) => listNames(`${coll('list-a')}?labelSelector=${encodeURIComponent(q)}`);
      assert.deepEqual(await sel('app=farm'), ['list-a/ann', 'list-a/bob']);
      assert.deepEqual(await sel('app==zoo'), ['list-a/cid']);
      assert.deepEqual(await sel('env!=prod'), ['list-a/bob', 'list-a/cid']);
      assert.deepEqual(await sel('env in (prod,dev)'), ['list-a/ann', 'list-a/bob']);
      assert.deepEqual(await sel('env notin (prod)'), ['list-a/bob', 'list-a/cid']);
      assert.deepEqual(await sel('env'), ['list-a/ann', 'list-a/bob']);
      assert.deepEqual(await sel('!env'), ['list-a/cid']);
      assert.deepEqual(await sel('app=farm,env=dev'), ['list-a/bob']);
      assert.deepEqual(await listNames(`${API}/llamas?labelSelector=${encodeURIComponent('env=prod')}`), ['list-a/ann', 'list-b/ann']);
    });

    it('400 for a label selector that does not parse', async () => {
      expectStatus(await get(`${coll('list-a')}?labelSelector=${encodeURIComponent('app in (farm')}`), 400, 'BadRequest');
      expectStatus(await get(`${coll('list-a')}?labelSelector=${encodeURIComponent('app=(x)')}`), 400, 'BadRequest');
    });

    it('filters by field selectors metadata.name and metadata.namespace', async () => {
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=metadata.name%3Dbob`), ['list-a/bob']);
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=metadata.name%3D%3Dbob`), ['list-a/bob']);
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=metadata.name%21%3Dbob`), ['list-a/ann', 'list-a/cid']);
      assert.deepEqual(await listNames(`${API}/llamas?fieldSelector=metadata.name%3Dann`), ['list-a/ann', 'list-b/ann']);
      assert.deepEqual(await listNames(`${API}/llamas?fieldSelector=metadata.namespace%3Dlist-b`), ['list-b/ann', 'list-b/dot']);
      assert.deepEqual(await listNames(`${API}/llamas?fieldSelector=${encodeURIComponent('metadata.namespace=list-a,metadata.name=cid')}`), ['list-a/cid']);
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=metadata.name%3Dnobody`), []);
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=metadata.name%3Dann&labelSelector=env%3Ddev`), []);
    });

    it('supports the resource\'s selectable field spec.color; 400 for a field that is not selectable', async () => {
      assert.deepEqual(await listNames(`${coll('list-a')}?fieldSelector=spec.color%3Dbrown`), ['list-a/bob']);
      expectStatus(await get(`${coll('list-a')}?fieldSelector=spec.weight%3D10`), 400, 'BadRequest', 'field label not supported: spec.weight');
      expectStatus(await get(`${coll('list-a')}?fieldSelector=status.phase%3DRunning`), 400, 'BadRequest', 'field label not supported: status.phase');
    });

    it('422 ListOptions for resourceVersionMatch without resourceVersion, or with an unknown value', async () => {
      const st = expectStatus(await get(`${coll('list-a')}?resourceVersionMatch=Exact`), 422, 'Invalid',
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
      assert.equal(st.details.kind, 'ListOptions');
      assert.equal(st.details.group, 'meta.k8s.io');
      expectStatus(await get(`${coll('list-a')}?resourceVersion=1&resourceVersionMatch=Sometimes`), 422, 'Invalid', /resourceVersionMatch: Unsupported value: "Sometimes"/);
      expectStatus(await get(`${coll('list-a')}?resourceVersion=0&resourceVersionMatch=Exact`), 422, 'Invalid', /resourceVersionMatch "exact" is forbidden for resourceVersion "0"/);
      expectStatus(await get(`${coll('list-a')}?sendInitialEvents=true`), 422, 'Invalid', /sendInitialEvents is forbidden for list/);
    });

    it('resourceVersion + resourceVersionMatch=Exact lists the state as of that version', async () => {
      const C = coll('exact');
      const a = await create(C, llama('a'));
      await create(C, llama('b'));
      const then = (await get(C)).json();
      // Change everything after the snapshot: modify a, delete b, add c.
      assert.equal((await mergePatch(`${C}/a`, { spec: { weight: 99 } })).status, 200);
      assert.equal((await del(`${C}/b`)).status, 200);
      await create(C, llama('c'));
      const now = (await get(C)).json();
      assert.deepEqual(names(now), ['a', 'c']);

      const old = await get(`${C}?resourceVersion=${then.metadata.resourceVersion}&resourceVersionMatch=Exact`);
      assert.equal(old.status, 200, old.body);
      const o = old.json();
      assert.equal(o.metadata.resourceVersion, then.metadata.resourceVersion);
      assert.deepEqual(o.items, then.items);
      assert.equal(o.items[0].metadata.resourceVersion, a.metadata.resourceVersion);
      assert.equal(o.items[0].spec.weight, 120);

      // NotOlderThan (and no match) answer the current state.
      const nt = (await get(`${C}?resourceVersion=${then.metadata.resourceVersion}&resourceVersionMatch=NotOlderThan`)).json();
      assert.deepEqual(names(nt), ['a', 'c']);
    });

    describe('pagination', () => {
      const P = coll('pages');
      const all: string[] = [];
      before(async () => {
        for (let i = 0; i < 25; i++) {
          const n = `p${String(i).padStart(2, '0')}`;
          await create(P, llama(n, undefined, { labels: { parity: i % 2 ? 'odd' : 'even' } }));
          all.push(n);
        }
      });

      it('limit/continue return every item exactly once with remainingItemCount, all at the first page\'s resourceVersion', async () => {
        const seen: string[] = [];
        let cont = '';
        let rv = '';
        const remaining: (number | undefined)[] = [];
        for (let page = 0; page < 10; page++) {
          const r = await get(`${P}?limit=10${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
          assert.equal(r.status, 200, r.body);
          const l = r.json();
          if (!rv) rv = l.metadata.resourceVersion;
          assert.equal(l.metadata.resourceVersion, rv);
          seen.push(...names(l));
          remaining.push(l.metadata.remainingItemCount);
          cont = l.metadata.continue ?? '';
          if (!cont) break;
        }
        assert.deepEqual(seen, all);
        assert.deepEqual(remaining, [15, 5, undefined]);
      });

      it('with a label selector pages through matches only (no remainingItemCount)', async () => {
        const seen: string[] = [];
        let cont = '';
        for (let page = 0; page < 20; page++) {
          const r = await get(`${P}?limit=4&labelSelector=parity%3Dodd${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
          assert.equal(r.status, 200, r.body);
          const l = r.json();
          assert.ok(l.items.length <= 4);
          assert.equal(l.metadata.remainingItemCount, undefined);
          seen.push(...names(l));
          cont = l.metadata.continue ?? '';
          if (!cont) break;
        }
        assert.deepEqual(seen, all.filter((_, i) => i % 2 === 1));
      });

      it('a continue token keeps serving the snapshot of the first page after the set changed', async () => {
        const first = (await get(`${P}?limit=10`)).json();
        assert.deepEqual(names(first), all.slice(0, 10));
        const snapshot = (await get(P)).json();
        // After the first page: delete an item still to come, modify another, add one that sorts into the rest.
        assert.equal((await del(`${P}/p15`)).status, 200);
        assert.equal((await mergePatch(`${P}/p20`, { spec: { weight: 5 } })).status, 200);
        await create(P, llama('p12a'));
        const rest: Obj[] = [];
        let cont: string = first.metadata.continue;
        while (cont) {
          const l = (await get(`${P}?limit=10&continue=${encodeURIComponent(cont)}`)).json();
          assert.equal(l.metadata.resourceVersion, first.metadata.resourceVersion);
          rest.push(...l.items);
          cont = l.metadata.continue ?? '';
        }
        assert.deepEqual([...first.items, ...rest], snapshot.items);
        // A fresh list sees the changes.
        const now = names((await get(P)).json());
        assert.ok(now.includes('p12a') && !now.includes('p15'));
      });

      it('400 for a continue token that is not one', async () => {
        expectStatus(await get(`${P}?limit=10&continue=garbage`), 400, 'BadRequest');
        expectStatus(await get(`${P}?limit=10&continue=${Buffer.from('{"v":"meta.k8s.io/v1","rv":-3,"start":"x"}').toString('base64url')}`), 400, 'BadRequest');
      });

      it('422 for resourceVersionMatch together with continue', async () => {
        const first = (await get(`${P}?limit=10`)).json();
        expectStatus(await get(`${P}?limit=10&continue=${encodeURIComponent(first.metadata.continue)}&resourceVersion=1&resourceVersionMatch=NotOlderThan`), 422, 'Invalid',
          /resourceVersionMatch is forbidden when continue is provided/);
      });
    });
  });

  describe('Table and PartialObjectMetadata', () => {
    const T = coll('tables');
    let dolly: Obj;
    before(async () => {
      dolly = await create(T, llama('dolly', { weight: 120, height: 1.7, color: 'brown', favoriteFood: 'hay' }, { labels: { app: 'farm' } }));
      await create(T, llama('ema', { weight: 90, height: 1.4 }));
    });

    const columns = [
      { name: 'Name', type: 'string', format: 'name', priority: 0 },
      { name: 'Color', type: 'string', format: '', priority: 0 },
      { name: 'Weight', type: 'number', format: '', priority: 0 },
      { name: 'Height', type: 'number', format: '', priority: 1 },
      { name: 'Food', type: 'string', format: '', priority: 1 },
      { name: 'Age', type: 'date', format: '', priority: 0 },
    ];

    const checkTable = (t: Obj, version: 'v1' | 'v1beta1') => {
      assert.equal(t.kind, 'Table');
      assert.equal(t.apiVersion, `meta.k8s.io/${version}`);
      assert.deepEqual((t.columnDefinitions as Obj[]).map(({ name, type, format, priority }) => ({ name, type, format, priority })), columns);
      for (const c of t.columnDefinitions) assert.equal(typeof c.description, 'string');
      assert.match(t.metadata.resourceVersion, /^\d+$/);
    };

    it('lists as a v1 Table with kubectl\'s Accept: columns, cells, PartialObjectMetadata rows', async () => {
      const r = await get(T, KUBECTL_GET_ACCEPT);
      assert.equal(r.status, 200, r.body);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      const t = r.json();
      checkTable(t, 'v1');
      assert.equal(t.metadata.resourceVersion, (await get(T)).json().metadata.resourceVersion);
      assert.equal(t.rows.length, 2);
      const [row, row2] = t.rows;
      assert.deepEqual(row.cells.slice(0, 5), ['dolly', 'brown', 120, 1.7, 'hay']);
      assert.match(row.cells[5], /^\d+s$/, 'a fresh object is seconds old (HumanDuration)');
      assert.deepEqual(row2.cells.slice(0, 5), ['ema', 'white', 90, 1.4, null]);
      assert.deepEqual(row.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: dolly.metadata });
    });

    it('lists as a v1beta1 Table when that is asked for', async () => {
      const t = (await get(T, TABLE_V1BETA1)).json();
      checkTable(t, 'v1beta1');
      assert.equal(t.rows[0].object.kind, 'PartialObjectMetadata');
      assert.equal(t.rows[0].object.apiVersion, 'meta.k8s.io/v1beta1');
    });

    it('gets one object as a one-row Table', async () => {
      const r = await get(`${T}/dolly`, TABLE_V1);
      assert.equal(r.status, 200, r.body);
      const t = r.json();
      checkTable(t, 'v1');
      assert.equal(t.metadata.resourceVersion, dolly.metadata.resourceVersion);
      assert.equal(t.rows.length, 1);
      assert.equal(t.rows[0].cells[0], 'dolly');
      assert.equal(t.rows[0].object.metadata.uid, dolly.metadata.uid);
    });

    it('includeObject=None omits row objects, Object embeds the full Llama, Metadata is the default', async () => {
      const none = (await get(`${T}?includeObject=None`, TABLE_V1)).json();
      for (const row of none.rows) assert.ok(!('object' in row));
      const full = (await get(`${T}?includeObject=Object`, TABLE_V1)).json();
      assert.deepEqual(full.rows[0].object, dolly);
      const meta = (await get(`${T}/dolly?includeObject=Metadata`, TABLE_V1)).json();
      assert.equal(meta.rows[0].object.kind, 'PartialObjectMetadata');
    });

    it('400 for an includeObject value that is not None, Metadata or Object', async () => {
      expectStatus(await get(`${T}?includeObject=Everything`, TABLE_V1), 400, 'BadRequest');
      expectStatus(await get(`${T}/dolly?includeObject=Everything`, TABLE_V1), 400, 'BadRequest');
    });

    it('answers PartialObjectMetadataList for a list and PartialObjectMetadata for a get', async () => {
      const l = (await get(T, 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1')).json();
      assert.equal(l.kind, 'PartialObjectMetadataList');
      assert.equal(l.apiVersion, 'meta.k8s.io/v1');
      assert.match(l.metadata.resourceVersion, /^\d+$/);
      assert.deepEqual(l.items[0], { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: dolly.metadata });
      assert.equal(l.items.length, 2);

      const g = (await get(`${T}/dolly`, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1')).json();
      assert.deepEqual(g, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: dolly.metadata });
      const b = (await get(`${T}/dolly`, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1')).json();
      assert.equal(b.apiVersion, 'meta.k8s.io/v1beta1');
    });

    it('406 when the only alternative is the wrong partial kind for the target', async () => {
      expectStatus(await get(T, 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1'), 406, 'NotAcceptable');
      expectStatus(await get(T, 'application/json;as=Table;g=meta.k8s.io;v=v2'), 406, 'NotAcceptable');
    });
  });
});

describe('an expired continue token', () => {
  let s: TestServer;
  before(async () => { s = await startTestServer({ watchHistory: 5 }); });
  after(async () => { await s.close(); });

  it('410 Expired once the history behind it is compacted', async () => {
    const P = coll('expiry');
    for (let i = 0; i < 6; i++) {
      const r = await s.request('POST', P, { body: llama(`e${i}`) });
      assert.equal(r.status, 201, r.body);
    }
    const first = (await s.request('GET', `${P}?limit=2`)).json();
    assert.ok(first.metadata.continue);
    // Still consistent right away.
    assert.equal((await s.request('GET', `${P}?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`)).status, 200);
    for (let i = 0; i < 30; i++) {
      const r = await s.request('PATCH', `${P}/e0`, { body: { spec: { weight: i + 1 } }, contentType: 'application/merge-patch+json' });
      assert.equal(r.status, 200, r.body);
    }
    const expired = expectStatus(await s.request('GET', `${P}?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`), 410, 'Expired',
      /^The provided continue parameter is too old to display a consistent list result/);
    const exact = expectStatus(await s.request('GET', `${P}?resourceVersion=${first.metadata.resourceVersion}&resourceVersionMatch=Exact`), 410, 'Expired', /^too old resource version: /);
    assert.deepEqual(exact.metadata, {});
    // As the message says: the Status's metadata.continue goes on after the expired page at the latest state.
    const token = (expired.metadata as { continue?: string }).continue;
    assert.ok(token, JSON.stringify(expired));
    const rest = (await s.request('GET', `${P}?limit=10&continue=${encodeURIComponent(token)}`)).json();
    assert.deepEqual(rest.items.map((i: Obj) => (i.metadata as { name: string }).name), ['e2', 'e3', 'e4', 'e5']);
    assert.equal(rest.metadata.continue, undefined);
  });
});
