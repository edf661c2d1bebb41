// The Llama status subresource over real HTTPS, judged against kube-apiserver serving a CRD with
// `subresources: {status: {}}` (apiextensions-apiserver customresource strategy.go / status_strategy.go;
// the expected answers below were read off a real kube-apiserver 1.33 running such a CRD), plus
// metav1.Condition validation (apimachinery v0.33 ValidateConditions) and `kubectl wait --for=condition`.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type Response, type TestServer } from '../helpers/testServer.js';
import { kubectl, spawnKubectl } from '../helpers/kubectl.js';
import { tokenAuthenticator } from '../../src/server/auth/standalone.js';
import type { Authorizer } from '../../src/server/auth/types.js';
import type { RequestInfo } from '../../src/endpoints/requestInfo.js';
import type { ObjectMeta } from '../../src/apimachinery/types.js';
import { llamaDescriptor } from '../../src/registry/farm/llama.js';
import { farmPodDescriptor } from '../../src/registry/farm/farmpod.js';
import { resetFieldsOf } from '../../src/registry/generic/strategy.js';
import { StatusStore } from '../../src/registry/generic/statusStore.js';
import { buildResources } from '../../src/registry/farm/index.js';

const API = '/apis/farm.example.com/v1alpha';
const B = `${API}/namespaces/default/llamas`;
const T0 = '2024-05-01T10:00:00Z';

interface Condition { type?: string; status?: string; reason?: string; message?: string; lastTransitionTime?: string; observedGeneration?: number }
interface Llama {
  apiVersion: string; kind: string;
  metadata: ObjectMeta;
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[]; [k: string]: unknown };
  [k: string]: unknown;
}
interface Status { kind: string; code: number; reason: string; message: string; details?: { name?: string; group?: string; kind?: string; causes?: { reason: string; message: string; field: string }[] } }

function llama(name: string, extra: Partial<Llama> = {}): Llama {
  return { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name }, spec: { weight: 120, height: 1.7 }, ...extra };
}

function expectStatus(res: Response, code: number, reason: string, message?: string): Status {
  assert.equal(res.status, code, res.body);
  const st = res.json<Status>();
  assert.equal(st.kind, 'Status', res.body);
  assert.equal(st.reason, reason, res.body);
  if (message !== undefined) assert.equal(st.message, message);
  return st;
}

const ready = (status: 'True' | 'False', observedGeneration = 1): Condition =>
  ({ type: 'Ready', status, reason: status === 'True' ? 'AtHome' : 'Wandering', message: '', lastTransitionTime: T0, observedGeneration });

describe('llama /status subresource', () => {
  let s: TestServer;
  before(async () => { s = await startTestServer(); });
  after(async () => { await s.close(); });

  const ok = async (res: Promise<Response>, code = 200): Promise<Llama> => {
    const r = await res;
    assert.equal(r.status, code, r.body);
    return r.json<Llama>();
  };
  const create = (body: Llama) => ok(s.request('POST', B, { body }), 201);
  const get = (name: string, sub = '') => ok(s.request('GET', `${B}/${name}${sub}`));
  const put = (name: string, body: Llama, sub = '') => s.request('PUT', `${B}/${name}${sub}`, { body });
  const mergePatch = (name: string, patch: unknown, sub = '') => s.request('PATCH', `${B}/${name}${sub}`, { body: patch, contentType: 'application/merge-patch+json' });
  const warnings = (r: Response) => [r.headers.warning ?? []].flat().join(', ');

  it('GET /status returns the whole object', async () => {
    await create(llama('getter'));
    assert.deepEqual(await get('getter', '/status'), await get('getter'));
  });

  it('create drops .status (after reporting its unknown fields); generation starts at 1', async () => {
    const r = await s.request('POST', B, { body: llama('born', { status: { observedGeneration: 5, conditions: [ready('True')], bogus: 1 } }) });
    assert.equal(r.status, 201, r.body);
    const created = r.json<Llama>();
    assert.equal(created.status, undefined);
    assert.equal(created.metadata.generation, 1);
    assert.equal(warnings(r), '299 - "unknown field \\"status.bogus\\""');
    assert.equal((await get('born')).status, undefined);
  });

  it('PUT /status changes only .status: spec, labels, annotations and generation stay; unknown fields anywhere are still reported', async () => {
    const c = await create(llama('stat', { metadata: { name: 'stat', labels: { x: '1' } } }));
    const r = await put('stat', {
      ...c, metadata: { ...c.metadata, labels: { x: '2' }, annotations: { y: 'z' }, finalizers: ['farm.example.com/keep'] },
      spec: { weight: 99, height: 1.7, bogus: 1 }, status: { observedGeneration: 3, bogus: 2 },
    }, '/status');
    assert.equal(r.status, 200, r.body);
    const after = r.json<Llama>();
    assert.deepEqual(after.status, { observedGeneration: 3 });
    assert.deepEqual(after.spec, c.spec);
    assert.deepEqual(after.metadata.labels, { x: '1' });
    assert.equal(after.metadata.annotations, undefined);
    assert.equal(after.metadata.finalizers, undefined);
    assert.equal(after.metadata.generation, 1);
    assert.notEqual(after.metadata.resourceVersion, c.metadata.resourceVersion);
    // kube-apiserver: 299 - "unknown field \"spec.bogus\"", 299 - "unknown field \"status.bogus\""
    assert.equal(warnings(r), '299 - "unknown field \\"spec.bogus\\"", 299 - "unknown field \\"status.bogus\\""');
    assert.deepEqual(await get('stat'), after);
  });

  it('PUT /status with fieldValidation=Strict refuses an unknown field of the ignored spec, as the decoder does', async () => {
    const c = await create(llama('strict'));
    const r = await s.request('PUT', `${B}/strict/status?fieldValidation=Strict`, { body: { ...c, spec: { ...c.spec, bogus: 1 }, status: { observedGeneration: 1 } } });
    expectStatus(r, 400, 'BadRequest', 'Llama in version "v1alpha" cannot be handled as a Llama: strict decoding error: unknown field "spec.bogus"');
  });

  it('PUT /status without .status removes it', async () => {
    const c = await create(llama('unset'));
    const withStatus = await ok(put('unset', { ...c, status: { observedGeneration: 1 } }, '/status'));
    const { status: _gone, ...noStatus } = withStatus;
    const cleared = await ok(put('unset', noStatus as Llama, '/status'));
    assert.equal(cleared.status, undefined);
  });

  it('PUT on the main resource keeps the stored status and moves generation only with the spec', async () => {
    const c = await create(llama('main'));
    const st = await ok(put('main', { ...c, status: { observedGeneration: 7 } }, '/status'));
    const statusOnly = await ok(put('main', { ...st, status: { observedGeneration: 99, conditions: [ready('True')] } }));
    assert.deepEqual(statusOnly.status, { observedGeneration: 7 });
    assert.equal(statusOnly.metadata.generation, 1);
    const specToo = await ok(put('main', { ...statusOnly, spec: { ...statusOnly.spec, weight: 121 }, status: { observedGeneration: 98 } }));
    assert.deepEqual(specToo.status, { observedGeneration: 7 });
    assert.equal(specToo.spec.weight, 121);
    assert.equal(specToo.metadata.generation, 2);
    // No status sent at all: the stored one is kept too (kubectl apply of a manifest without status).
    const { status: _s, ...bare } = specToo;
    assert.deepEqual((await ok(put('main', bare as Llama))).status, { observedGeneration: 7 });
  });

  it('PUT on the main resource of an object without status cannot add one', async () => {
    const c = await create(llama('nostatus'));
    const r = await ok(put('nostatus', { ...c, status: { observedGeneration: 1 } }));
    assert.equal(r.status, undefined);
    assert.equal(r.metadata.generation, 1);
    // Nothing changed, so nothing was written (upstream's GuaranteedUpdate skips an identical object).
    assert.equal(r.metadata.resourceVersion, c.metadata.resourceVersion);
  });

  it('merge and JSON patches of /status change only .status; of the main resource, never .status', async () => {
    const c = await create(llama('patchy', { metadata: { name: 'patchy', labels: { x: '1' } } }));
    const p1 = await ok(mergePatch('patchy', { spec: { weight: 5 }, metadata: { labels: { q: 'r' } }, status: { observedGeneration: 11 } }, '/status'));
    assert.deepEqual(p1.status, { observedGeneration: 11 });
    assert.deepEqual(p1.spec, c.spec);
    assert.deepEqual(p1.metadata.labels, { x: '1' });
    assert.equal(p1.metadata.generation, 1);
    const p2 = await ok(s.request('PATCH', `${B}/patchy/status`, {
      body: [{ op: 'add', path: '/status/conditions', value: [ready('False')] }, { op: 'replace', path: '/spec/weight', value: 6 }],
      contentType: 'application/json-patch+json',
    }));
    assert.deepEqual(p2.status, { observedGeneration: 11, conditions: [ready('False')] });
    assert.equal(p2.spec.weight, c.spec.weight);
    const p3 = await ok(mergePatch('patchy', { spec: { weight: 7 }, status: { observedGeneration: 1 } }));
    assert.deepEqual(p3.status, p2.status);
    assert.equal(p3.spec.weight, 7);
    assert.equal(p3.metadata.generation, 2);
    const p4 = await ok(mergePatch('patchy', { status: { observedGeneration: 2 } }));
    assert.deepEqual(p4.status, p2.status);
    assert.equal(p4.metadata.generation, 2);
  });

  it('a dry-run write of /status stores nothing', async () => {
    const c = await create(llama('dry'));
    const r = await ok(s.request('PUT', `${B}/dry/status?dryRun=All`, { body: { ...c, status: { observedGeneration: 4 } } }));
    assert.deepEqual(r.status, { observedGeneration: 4 });
    assert.equal((await get('dry')).status, undefined);
  });

  it('errors of /status are the CRD\'s: NotFound, missing resourceVersion, conflict, name mismatch, 405 for POST and DELETE', async () => {
    const c = await create(llama('errs'));
    expectStatus(await put('zzz', llama('zzz', { metadata: { name: 'zzz', resourceVersion: '1' } }), '/status'), 404, 'NotFound', 'llamas.farm.example.com "zzz" not found');
    const { resourceVersion: _rv, ...noRV } = c.metadata;
    expectStatus(await put('errs', { ...c, metadata: noRV }, '/status'), 422, 'Invalid',
      'llamas.farm.example.com "errs" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
    await ok(put('errs', { ...c, status: { observedGeneration: 1 } }, '/status'));
    expectStatus(await put('errs', { ...c, status: { observedGeneration: 2 } }, '/status'), 409, 'Conflict',
      'Operation cannot be fulfilled on llamas.farm.example.com "errs": the object has been modified; please apply your changes to the latest version and try again');
    const latest = await get('errs');
    expectStatus(await put('errs', { ...latest, metadata: { ...latest.metadata, name: 'other' } }, '/status'), 400, 'BadRequest',
      'the name of the object (other) does not match the name on the URL (errs)');
    expectStatus(await s.request('POST', `${B}/errs/status`, { body: latest }), 405, 'MethodNotAllowed',
      'create is not supported on resources of kind "llamas.farm.example.com"');
    expectStatus(await s.request('DELETE', `${B}/errs/status`), 405, 'MethodNotAllowed',
      'delete is not supported on resources of kind "llamas.farm.example.com"');
    // The CRD handler's answer to a watch of /status (its serveStatus serves get, update and patch only).
    expectStatus(await s.request('GET', `${API}/watch/namespaces/default/llamas/errs/status`), 405, 'MethodNotAllowed',
      'watch is not supported on resources of kind "llamas.farm.example.com"');
    // "status" right after the collection is just a name.
    expectStatus(await s.request('GET', `${B}/status`), 404, 'NotFound', 'llamas.farm.example.com "status" not found');
  });

  it('a subresource the resource does not have is 404 NotFound, as the CRD handler answers', async () => {
    await create(llama('nosub'));
    expectStatus(await s.request('GET', `${B}/nosub/scale`), 404, 'NotFound', 'llamas.farm.example.com "nosub" not found');
    expectStatus(await s.request('PUT', `${B}/nosub/scale`, { body: {} }), 404, 'NotFound', 'llamas.farm.example.com "nosub" not found');
    // A method the served path does not have is still 405.
    expectStatus(await s.request('POST', `${B}/nosub`, { body: {} }), 405, 'MethodNotAllowed');
  });

  describe('status.conditions: metav1.Condition, validated as ValidateConditions (apimachinery v0.33) words it', () => {
    const reasonRule = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";
    const nameRule = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    const rejected = async (name: string, conditions: Condition[]): Promise<Status> => {
      const c = await create(llama(name));
      const r = await put(name, { ...c, status: { conditions } }, '/status');
      const st = expectStatus(r, 422, 'Invalid');
      assert.deepEqual(st.details && { name: st.details.name, group: st.details.group, kind: st.details.kind }, { name, group: 'farm.example.com', kind: 'Llama' });
      return st;
    };

    it('every rule, in upstream\'s order, with its exact message', async () => {
      const st = await rejected('conds', [
        { type: 'Ready', status: 'Maybe', reason: '1bad', message: 'm', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', reason: 'Ok', message: '', lastTransitionTime: T0 },
        { type: 'bad type!', status: 'False', observedGeneration: -1, reason: '', message: 'x'.repeat(32 * 1024 + 1) },
        { type: 'example.com/Fed', status: 'Unknown', reason: 'A'.repeat(1025), message: '', lastTransitionTime: '0001-01-01T00:00:00Z' },
      ]);
      const causes = [
        ['status.conditions[0].status', 'FieldValueNotSupported', 'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'],
        ['status.conditions[0].reason', 'FieldValueInvalid', `Invalid value: "1bad": ${reasonRule}`],
        ['status.conditions[1].type', 'FieldValueDuplicate', 'Duplicate value: "Ready"'],
        ['status.conditions[2].type', 'FieldValueInvalid', `Invalid value: "bad type!": ${nameRule}`],
        ['status.conditions[2].observedGeneration', 'FieldValueInvalid', 'Invalid value: -1: must be greater than or equal to zero'],
        ['status.conditions[2].lastTransitionTime', 'FieldValueRequired', 'Required value: must be set'],
        ['status.conditions[2].reason', 'FieldValueRequired', 'Required value: must be set'],
        ['status.conditions[2].message', 'FieldValueTooLong', 'Too long: may not be more than 32768 bytes'],
        ['status.conditions[3].lastTransitionTime', 'FieldValueRequired', 'Required value: must be set'],
        ['status.conditions[3].reason', 'FieldValueTooLong', 'Too long: may not be more than 1024 bytes'],
      ];
      assert.deepEqual(st.details?.causes?.map((c) => [c.field, c.reason, c.message]), causes);
      assert.equal(st.message, `Llama.farm.example.com "conds" is invalid: [${causes.map(([f, , m]) => `${f}: ${m}`).join(', ')}]`);
    });

    it('an empty type is an invalid qualified name and an empty status is unsupported (not "required", in v0.33)', async () => {
      const st = await rejected('empties', [{ type: '', status: '', reason: 'R', message: '', lastTransitionTime: T0 }]);
      assert.deepEqual(st.details?.causes?.map((c) => `${c.field}: ${c.message}`), [
        'status.conditions[0].type: Invalid value: "": name part must be non-empty',
        `status.conditions[0].type: Invalid value: "": ${nameRule}`,
        'status.conditions[0].status: Unsupported value: "": supported values: "False", "True", "Unknown"',
      ]);
    });

    it('a lastTransitionTime must parse as a date-time (worded as the schema layer words formats)', async () => {
      const time = await rejected('badtime', [{ type: 'Ready', status: 'True', reason: 'R', message: '', lastTransitionTime: 'yesterday' }]);
      assert.equal(time.message, 'Llama.farm.example.com "badtime" is invalid: status.conditions[0].lastTransitionTime: Invalid value: "yesterday": status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"');
    });

    it('schema type errors come first, and stop the condition rules (as CEL is skipped after them)', async () => {
      const typed = await rejected('typed', [{ type: '', status: 'Maybe', reason: true as unknown as string, message: '', lastTransitionTime: T0 }]);
      assert.equal(typed.message, 'Llama.farm.example.com "typed" is invalid: status.conditions[0].reason: Invalid value: "boolean": status.conditions[0].reason in body must be of type string: "boolean"');
    });

    it('an int64 of the wrong type is worded "must be of type integer"', async () => {
      const typed = await rejected('typedint', [{ type: 'Ready', status: 'True', reason: 'R', message: '', lastTransitionTime: T0, observedGeneration: true as unknown as number }]);
      assert.equal(typed.message, 'Llama.farm.example.com "typedint" is invalid: status.conditions[0].observedGeneration: Invalid value: "boolean": status.conditions[0].observedGeneration in body must be of type integer: "boolean"');
    });

    it('valid conditions are stored as sent; a missing message is Go\'s empty string, not an error', async () => {
      const c = await create(llama('good'));
      const conditions: Condition[] = [ready('True'), { type: 'farm.example.com/Shorn', status: 'Unknown', reason: 'Season:Spring,Late_', lastTransitionTime: '2024-05-01T10:00:00.5+02:00' }];
      const r = await ok(put('good', { ...c, status: { conditions, observedGeneration: 1 } }, '/status'));
      assert.deepEqual(r.status, { conditions, observedGeneration: 1 });
    });

    it('the main resource never validates a status it ignores', async () => {
      const c = await create(llama('ignored'));
      const r = await ok(put('ignored', { ...c, status: { conditions: [{ type: '', status: 'Maybe' }] } }));
      assert.equal(r.status, undefined);
    });
  });

  it('kubectl wait --for=condition=Ready returns once a status update says Ready', async () => {
    const home = await mkdtemp(join(tmpdir(), 'farm-status-kubectl-'));
    try {
      const c = await create(llama('waiter'));
      const wait = spawnKubectl(['wait', '--for=condition=Ready', 'llama/waiter', '-n', 'default', '--timeout=30s'], { kubeconfig: s.kubeconfig, home });
      // Not ready yet: a False condition keeps it waiting.
      const notYet = await ok(put('waiter', { ...c, status: { conditions: [ready('False')] } }, '/status'));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(wait.child.exitCode, null, `kubectl wait ended before the llama was Ready:\n${wait.stdout}\n${wait.stderr}`);
      await ok(put('waiter', { ...notYet, status: { conditions: [ready('True')], observedGeneration: 1 } }, '/status'));
      const done = await wait.exited;
      assert.equal(done.code, 0, done.stderr);
      assert.equal(done.stdout.trim(), 'llama.farm.example.com/waiter condition met');
      // And at once when it already holds.
      const again = await kubectl(['wait', '--for=condition=Ready=True', 'llama/waiter', '-n', 'default', '--timeout=10s'], { kubeconfig: s.kubeconfig, home });
      assert.equal(again.code, 0, again.stderr);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('discovery lists llamas/status (legacy and aggregated) as kube-apiserver lists a CRD\'s', async () => {
    const legacy = (await s.request('GET', API)).json<{ resources: Record<string, unknown>[] }>();
    const names = legacy.resources.map((r) => r.name);
    assert.deepEqual(names.slice(names.indexOf('llamas'), names.indexOf('llamas') + 2), ['llamas', 'llamas/status']);
    assert.deepEqual(legacy.resources.find((r) => r.name === 'llamas/status'),
      { name: 'llamas/status', singularName: '', namespaced: true, kind: 'Llama', verbs: ['get', 'patch', 'update'] });
    const agg = (await s.request('GET', '/apis', { headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' } }))
      .json<{ items: { metadata: { name: string }; versions: { resources: { resource: string; subresources?: unknown }[] }[] }[] }>();
    const llamas = agg.items.find((i) => i.metadata.name === 'farm.example.com')?.versions[0].resources.find((r) => r.resource === 'llamas');
    assert.deepEqual(llamas?.subresources, [{ subresource: 'status', responseKind: { group: 'farm.example.com', version: 'v1alpha', kind: 'Llama' }, verbs: ['get', 'patch', 'update'] }]);
  });

  it('OpenAPI v3 and v2 publish the /status operations with kube\'s CRD operation ids, and metav1.Condition', async () => {
    const index = (await s.request('GET', '/openapi/v3')).json<{ paths: Record<string, { serverRelativeURL: string }> }>();
    type Op = { operationId: string; description: string; 'x-kubernetes-action': string };
    const v3 = (await s.request('GET', index.paths['apis/farm.example.com/v1alpha'].serverRelativeURL))
      .json<{ paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, Record<string, unknown>> } }>();
    const path = `${API}/namespaces/{namespace}/llamas/{name}/status`;
    const summary = (ops: Record<string, Op>) => Object.fromEntries(Object.entries(ops).map(([m, o]) => [m, [o.operationId, o.description, o['x-kubernetes-action']]]));
    const expected = {
      get: ['readFarmExampleComV1alphaNamespacedLlamaStatus', 'read status of the specified Llama', 'get'],
      put: ['replaceFarmExampleComV1alphaNamespacedLlamaStatus', 'replace status of the specified Llama', 'put'],
      patch: ['patchFarmExampleComV1alphaNamespacedLlamaStatus', 'partially update status of the specified Llama', 'patch'],
    };
    assert.deepEqual(summary(v3.paths[path]), expected);
    const cond = v3.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.Condition'];
    assert.deepEqual(cond.required, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
    const statusSchema = v3.components.schemas['com.example.farm.v1alpha.Llama'] as { properties: { status: { properties?: Record<string, Record<string, unknown>> } } };
    const conditions = statusSchema.properties.status.properties?.conditions;
    assert.deepEqual(conditions && [conditions['x-kubernetes-list-type'], conditions['x-kubernetes-list-map-keys'], conditions['x-kubernetes-patch-strategy'], conditions['x-kubernetes-patch-merge-key']],
      ['map', ['type'], 'merge', 'type']);
    const v2 = (await s.request('GET', '/openapi/v2', { headers: { accept: 'application/json' } })).json<{ paths: Record<string, Record<string, Op>> }>();
    assert.deepEqual(summary(v2.paths[path]), expected);
  });
});

describe('the status subresource as data', () => {
  it('a descriptor declares it in one line; FarmPods have none', () => {
    assert.deepEqual(llamaDescriptor().subresources, { status: true });
    assert.equal(farmPodDescriptor().subresources, undefined);
  });

  it('reset fields are upstream\'s GetResetFields for a CRD: main resets status, /status resets spec', () => {
    assert.deepEqual(resetFieldsOf(llamaDescriptor()), { '': [['status']], status: [['spec']] });
    assert.deepEqual(resetFieldsOf({}), { '': [], status: [] });
    const llamas = buildResources({ watchHistory: 10, garbageCollection: false }).definitions.find((d) => d.plural === 'llamas');
    const status = llamas?.subresourceRest?.status;
    assert.ok(status instanceof StatusStore);
    assert.equal(status.subresource, 'status');
  });
});

describe('authorization of /status', () => {
  const TOKEN = 'status-authz-token';
  const seen: RequestInfo[] = [];
  const recording: Authorizer = { authorize: async (_user, info) => { seen.push(info); return { allowed: true }; } };
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ auth: { authenticators: [tokenAuthenticator(TOKEN)], rejectAnonymous: true, authorizer: recording } });
  });
  after(async () => { await s.close(); });

  it('is asked for resource llamas, subresource status, with the verb of the method', async () => {
    const created = await s.request('POST', B, { token: TOKEN, body: llama('authz') });
    assert.equal(created.status, 201, created.body);
    const c = created.json<Llama>();
    seen.length = 0;
    assert.equal((await s.request('GET', `${B}/authz/status`, { token: TOKEN })).status, 200);
    assert.equal((await s.request('PUT', `${B}/authz/status`, { token: TOKEN, body: { ...c, status: { observedGeneration: 1 } } })).status, 200);
    assert.equal((await s.request('PATCH', `${B}/authz/status`, { token: TOKEN, body: { status: { observedGeneration: 2 } }, contentType: 'application/merge-patch+json' })).status, 200);
    assert.deepEqual(seen.map((i) => [i.verb, i.apiGroup, i.apiVersion, i.namespace, i.resource, i.subresource, i.name]), [
      ['get', 'farm.example.com', 'v1alpha', 'default', 'llamas', 'status', 'authz'],
      ['update', 'farm.example.com', 'v1alpha', 'default', 'llamas', 'status', 'authz'],
      ['patch', 'farm.example.com', 'v1alpha', 'default', 'llamas', 'status', 'authz'],
    ]);
  });
});
