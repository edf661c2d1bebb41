// The audit policy: upstream's checker_test.go table (k8s.io/apiserver pkg/audit/policy, v0.33.0)
// as the oracle, properties of rule matching over generated rules and requests, and the policy
// file's validation messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { RequestInfo } from '../../src/apimachinery/types.js';
import { policyRuleEvaluator, ruleMatches, type AuditAttributes } from '../../src/server/audit/checker.js';
import { parsePolicy, PolicyError } from '../../src/server/audit/policy.js';
import type { Level, PolicyRule, Stage } from '../../src/server/audit/types.js';

const tim = { username: 'tim@k8s.io', groups: ['humans', 'developers'] };
const res = (o: Partial<RequestInfo>): RequestInfo => ({
  isResourceRequest: true, path: '', verb: 'get', apiGroup: '', apiVersion: 'v1', namespace: '', resource: '', subresource: '', name: '', ...o,
});
const attrs: Record<string, AuditAttributes> = {
  namespaced: { user: tim, info: res({ namespace: 'default', resource: 'pods', name: 'busybox', path: '/api/v1/namespaces/default/pods/busybox' }) },
  cluster: { user: tim, info: res({ apiGroup: 'rbac.authorization.k8s.io', apiVersion: 'v1beta1', resource: 'clusterroles', name: 'edit', path: '/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/edit' }) },
  nonResource: { user: tim, info: res({ isResourceRequest: false, apiVersion: '', path: '/logs/kubelet.log' }) },
  subresource: { user: tim, info: res({ namespace: 'default', resource: 'pods', subresource: 'log', name: 'busybox', path: '/api/v1/namespaces/default/pods/busybox' }) },
  Unauthorized: { info: res({ namespace: 'default', resource: 'pods', name: 'busybox', path: '/api/v1/namespaces/default/pods/busybox' }) },
};
const rules: Record<string, PolicyRule> = {
  default: { level: 'Metadata' },
  create: { level: 'Request', verbs: ['create'] },
  tims: { level: 'Metadata', users: ['tim@k8s.io'] },
  humans: { level: 'Metadata', userGroups: ['humans'] },
  serviceAccounts: { level: 'Request', userGroups: ['system:serviceaccounts'] },
  getPods: { level: 'RequestResponse', verbs: ['get'], resources: [{ resources: ['pods'] }] },
  getPodLogs: { level: 'Request', verbs: ['get'], resources: [{ resources: ['pods/log'] }] },
  getPodWildcardMatching: { level: 'Request', verbs: ['get'], resources: [{ resources: ['*'] }] },
  getPodResourceWildcardMatching: { level: 'Request', verbs: ['get'], resources: [{ resources: ['*/log'] }] },
  getPodSubResourceWildcardMatching: { level: 'Request', verbs: ['get'], resources: [{ resources: ['pods/*'] }] },
  getClusterRoles: { level: 'RequestResponse', verbs: ['get'], resources: [{ group: 'rbac.authorization.k8s.io', resources: ['clusterroles'] }], namespaces: [''] },
  getLogs: { level: 'RequestResponse', verbs: ['get'], nonResourceURLs: ['/logs*'] },
  getMetrics: { level: 'Request', verbs: ['get'], nonResourceURLs: ['/metrics'] },
  clusterRoleEdit: { level: 'Request', resources: [{ group: 'rbac.authorization.k8s.io', resources: ['clusterroles'], resourceNames: ['edit'] }] },
  'omit RequestReceived': { level: 'Request', omitStages: ['RequestReceived'] },
  'only audit panic': { level: 'Request', omitStages: ['RequestReceived', 'ResponseStarted', 'ResponseComplete'] },
};

function check(req: string, level: Level, policyStages: Stage[], stages: Stage[], ...names: string[]): void {
  const got = policyRuleEvaluator({ rules: names.map((n) => rules[n]!), omitStages: policyStages }).evaluate(attrs[req]!);
  assert.equal(got.level, level, `${req} under ${names.join(',')}`);
  assert.deepEqual(new Set(got.omitStages), new Set(stages), `${req} under ${names.join(',')}: stages`);
}

function auditLevels(stages: Stage[]): void {
  const t = (req: string, level: Level, ...names: string[]) => check(req, level, stages, stages, ...names);
  t('namespaced', 'Metadata', 'default'); t('namespaced', 'None', 'create'); t('namespaced', 'Metadata', 'tims');
  t('namespaced', 'Metadata', 'humans'); t('namespaced', 'None', 'serviceAccounts'); t('namespaced', 'RequestResponse', 'getPods');
  t('namespaced', 'None', 'getClusterRoles'); t('namespaced', 'None', 'getLogs'); t('namespaced', 'None', 'getMetrics');
  t('namespaced', 'Metadata', 'getMetrics', 'serviceAccounts', 'default'); t('namespaced', 'RequestResponse', 'getMetrics', 'getPods', 'default');
  t('namespaced', 'RequestResponse', 'getPodLogs', 'getPods');
  t('cluster', 'Metadata', 'default'); t('cluster', 'None', 'create'); t('cluster', 'Metadata', 'tims'); t('cluster', 'Metadata', 'humans');
  t('cluster', 'None', 'serviceAccounts'); t('cluster', 'None', 'getPods'); t('cluster', 'RequestResponse', 'getClusterRoles');
  t('cluster', 'Request', 'clusterRoleEdit', 'getClusterRoles'); t('cluster', 'None', 'getLogs'); t('cluster', 'None', 'getMetrics');
  t('cluster', 'Metadata', 'getMetrics', 'serviceAccounts', 'default'); t('cluster', 'RequestResponse', 'getMetrics', 'getClusterRoles', 'default');
  t('cluster', 'None', 'getPodLogs', 'getPods');
  t('nonResource', 'Metadata', 'default'); t('nonResource', 'None', 'create'); t('nonResource', 'Metadata', 'tims');
  t('nonResource', 'Metadata', 'humans'); t('nonResource', 'None', 'serviceAccounts'); t('nonResource', 'None', 'getPods');
  t('nonResource', 'None', 'getClusterRoles'); t('nonResource', 'RequestResponse', 'getLogs'); t('nonResource', 'None', 'getMetrics');
  t('nonResource', 'Metadata', 'getMetrics', 'serviceAccounts', 'default'); t('nonResource', 'RequestResponse', 'getLogs', 'getClusterRoles', 'default');
  t('nonResource', 'None', 'getPodLogs', 'getPods');
  t('subresource', 'Request', 'getPodLogs', 'getPods'); t('subresource', 'Request', 'getPodWildcardMatching');
  t('subresource', 'Request', 'getPodResourceWildcardMatching'); t('subresource', 'Request', 'getPodSubResourceWildcardMatching');
  t('Unauthorized', 'None', 'tims'); t('Unauthorized', 'Metadata', 'tims', 'default');
  t('Unauthorized', 'None', 'humans'); t('Unauthorized', 'Metadata', 'humans', 'default');
}

describe('audit policy evaluation: upstream checker_test.go', () => {
  it('TestChecker', () => {
    auditLevels([]);
    for (const req of ['namespaced', 'cluster', 'nonResource']) {
      check(req, 'Request', [], ['RequestReceived'], 'omit RequestReceived', 'getPods', 'default');
      check(req, 'Request', [], ['RequestReceived', 'ResponseStarted', 'ResponseComplete'], 'only audit panic', 'getPods', 'default');
    }
  });
  it('TestCheckerPolicyOmitStages', () => {
    const policyStages: Stage[] = ['RequestReceived', 'ResponseStarted'];
    auditLevels(policyStages);
    for (const req of ['namespaced', 'cluster']) {
      check(req, 'Request', policyStages, ['RequestReceived', 'ResponseStarted'], 'omit RequestReceived', 'getPods', 'default');
      check(req, 'Request', policyStages, ['RequestReceived', 'ResponseStarted', 'ResponseComplete'], 'only audit panic', 'getPods', 'default');
    }
    check('nonResource', 'Metadata', policyStages, ['RequestReceived', 'ResponseStarted'], 'default', 'omit RequestReceived', 'getPods');
    check('nonResource', 'Request', policyStages, ['RequestReceived', 'ResponseStarted', 'ResponseComplete'], 'only audit panic', 'getPods', 'default');
  });
  it('omitManagedFields: the rule decides, else the policy', () => {
    const info = attrs.namespaced!;
    assert.equal(policyRuleEvaluator({ rules: [{ level: 'Metadata' }], omitManagedFields: true }).evaluate(info).omitManagedFields, true);
    assert.equal(policyRuleEvaluator({ rules: [{ level: 'Metadata', omitManagedFields: false }], omitManagedFields: true }).evaluate(info).omitManagedFields, false);
    assert.equal(policyRuleEvaluator({ rules: [{ level: 'None', verbs: ['create'] }], omitManagedFields: true }).evaluate(info).omitManagedFields, true);
  });
});

// ---- properties over generated rules and requests ----------------------------------------------

const word = fc.constantFrom('a', 'b', 'pods', 'llamas', 'status', 'log', 'x.y');
const infoArb: fc.Arbitrary<RequestInfo> = fc.record({
  isResourceRequest: fc.boolean(), verb: fc.constantFrom('get', 'list', 'watch', 'create', 'update', 'patch', 'delete'),
  apiGroup: fc.constantFrom('', 'farm.example.com', 'apps'), namespace: fc.constantFrom('', 'default', 'kube-system'),
  resource: word, subresource: fc.constantFrom('', 'status', 'log'), name: fc.constantFrom('', 'a', 'b'),
  path: fc.constantFrom('/metrics', '/logs/x', '/healthz', '/apis'),
}).map((r) => ({ ...r, apiVersion: 'v1' }));
const userArb = fc.option(fc.record({ username: fc.constantFrom('alice', 'bob'), groups: fc.subarray(['g1', 'g2', 'system:authenticated']) }), { nil: undefined });
const list = (a: fc.Arbitrary<string>) => fc.option(fc.array(a, { maxLength: 3 }), { nil: undefined });
const ruleArb: fc.Arbitrary<PolicyRule> = fc.record({
  level: fc.constantFrom<Level>('None', 'Metadata', 'Request', 'RequestResponse'),
  users: list(fc.constantFrom('alice', 'bob')), userGroups: list(fc.constantFrom('g1', 'g2')),
  verbs: list(fc.constantFrom('get', 'list', 'create')), namespaces: list(fc.constantFrom('', 'default')),
  resources: fc.option(fc.array(fc.record({
    group: fc.constantFrom('', 'farm.example.com'), resources: list(fc.constantFrom('pods', 'llamas', '*', 'pods/*', '*/status', 'llamas/status')),
    resourceNames: list(fc.constantFrom('a', 'b')),
  }), { maxLength: 2 }), { nil: undefined }),
  nonResourceURLs: list(fc.constantFrom('/metrics', '/logs*', '*')),
}, { requiredKeys: ['level'] });

describe('audit policy evaluation: properties', () => {
  it('the first matching rule decides; none matching is None', () => {
    fc.assert(fc.property(fc.array(ruleArb, { maxLength: 5 }), infoArb, userArb, (rs, info, user) => {
      const got = policyRuleEvaluator({ rules: rs }).evaluate({ info, user });
      const first = rs.find((r) => ruleMatches(r, { info, user }));
      assert.equal(got.level, first?.level ?? 'None');
    }), { seed: 12, numRuns: 500 });
  });
  it('each constraint only narrows: adding one never turns a non-match into a match', () => {
    fc.assert(fc.property(ruleArb, ruleArb, infoArb, userArb, (r, extra, info, user) => {
      const narrowed: PolicyRule = { ...r, users: r.users ?? extra.users, userGroups: r.userGroups ?? extra.userGroups, verbs: r.verbs ?? extra.verbs };
      if (!ruleMatches(r, { info, user })) assert.equal(ruleMatches(narrowed, { info, user }), false);
    }), { seed: 13, numRuns: 500 });
  });
  it('a users or userGroups rule never matches a failed authentication (no user)', () => {
    fc.assert(fc.property(ruleArb, infoArb, (r, info) => {
      if (r.users?.length || r.userGroups?.length) assert.equal(ruleMatches(r, { info }), false);
    }), { seed: 14, numRuns: 300 });
  });
  it('resource rules never match non-resource requests and URL rules never match resource requests', () => {
    fc.assert(fc.property(ruleArb, infoArb, userArb, (r, info, user) => {
      const resourceRule = Boolean(r.resources?.length || r.namespaces?.length);
      const urlRule = !resourceRule && Boolean(r.nonResourceURLs?.length);
      if (resourceRule && !info.isResourceRequest) assert.equal(ruleMatches(r, { info, user }), false);
      if (urlRule && info.isResourceRequest) assert.equal(ruleMatches(r, { info, user }), false);
    }), { seed: 15, numRuns: 500 });
  });
  it('"<resource>/*" matches the resource and all its subresources (checker.go:209)', () => {
    const rule: PolicyRule = { level: 'Metadata', resources: [{ group: '', resources: ['pods/*'] }] };
    assert.equal(ruleMatches(rule, { info: res({ resource: 'pods' }) }), true);
    assert.equal(ruleMatches(rule, { info: res({ resource: 'pods', subresource: 'log' }) }), true);
    assert.equal(ruleMatches(rule, { info: res({ resource: 'nodes' }) }), false);
  });
});

// ---- the policy file ------------------------------------------------------------------------------

function policyError(text: string): string {
  try { parsePolicy(text); } catch (e) { assert.ok(e instanceof PolicyError, String(e)); return e.message; }
  assert.fail('expected a PolicyError');
}

describe('audit policy file', () => {
  it('reads a policy, with nulls and defaults as Go decodes them', () => {
    const { policy, warnings } = parsePolicy(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources: [{group: farm.example.com, resources: [llamas]}]
  users:
- level: Metadata
`);
    assert.deepEqual(warnings, []);
    assert.deepEqual(policy, {
      rules: [{ level: 'RequestResponse', resources: [{ group: 'farm.example.com', resources: ['llamas'], resourceNames: undefined }] }, { level: 'Metadata' }],
      omitStages: ['RequestReceived'], omitManagedFields: false,
    });
  });
  it('unknown fields are warnings (strict decoding falls back to lenient)', () => {
    const { warnings } = parsePolicy('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbz: [get]\n');
    assert.deepEqual(warnings, ['unknown field "rules[0].verbz"']);
  });
  it('validation messages as validation.go words them', () => {
    const head = 'apiVersion: audit.k8s.io/v1\nkind: Policy\n';
    assert.equal(policyError(`${head}rules:\n- level: Everything\n`),
      'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"');
    assert.equal(policyError(`${head}rules:\n- verbs: [get]\n`), 'rules[0].level: Required value');
    assert.equal(policyError(`${head}omitStages: [Sometimes]\nrules:\n- level: None\n  nonResourceURLs: [metrics]\n`),
      '[omitStages[0]: Invalid value: "Sometimes": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic, rules[0].nonResourceURLs[0]: Invalid value: "metrics": non-resource URL rules must begin with a \'/\' character]');
    assert.equal(policyError(`${head}rules:\n- level: None\n  nonResourceURLs: [/a]\n  namespaces: [x]\n`),
      'rules[0].nonResourceURLs: Invalid value: []string{"/a"}: rules cannot apply to both regular resources and non-resource URLs');
    assert.equal(policyError(`${head}rules:\n- level: None\n  resources: [{resourceNames: [a]}]\n`),
      'rules[0].resources.resourceNames: Invalid value: []string{"a"}: using resourceNames requires at least one resource');
    assert.equal(policyError(`${head}rules: []\n`), 'loaded illegal policy with 0 rules');
    assert.match(policyError('apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n'), /expected apiVersion audit\.k8s\.io\/v1, kind Policy/);
    assert.match(policyError(`${head}rules: everything\n`), /^failed decoding: rules: /);
    assert.match(policyError('rules: [level: None\n'), /^failed decoding: /);
  });
});
