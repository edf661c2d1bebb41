// Which audit level and stages a request gets: a port of k8s.io/apiserver
// pkg/audit/policy/checker.go. The first matching rule decides; none matching is level None.
import type { RequestInfo } from '../../apimachinery/types.js';
import type { Policy, PolicyRule, RequestAuditConfig, Stage } from './types.js';

/** The attributes a rule looks at: the authenticated user (none when authentication failed) and the request. */
export interface AuditAttributes {
  user?: { username: string; groups: readonly string[] };
  info: RequestInfo;
}

export interface PolicyRuleEvaluator { evaluate(attrs: AuditAttributes): RequestAuditConfig }

export function policyRuleEvaluator(policy: Policy): PolicyRuleEvaluator {
  // checker.go:33-38: each rule omits its own stages and the policy's.
  const policyStages = policy.omitStages ?? [];
  const rules = policy.rules.map((r) => ({
    rule: r,
    config: {
      level: r.level,
      omitStages: [...new Set<Stage>([...policyStages, ...(r.omitStages ?? [])])],
      omitManagedFields: r.omitManagedFields ?? policy.omitManagedFields ?? false,
    },
  }));
  const fallback: RequestAuditConfig = { level: 'None', omitStages: policyStages, omitManagedFields: policy.omitManagedFields ?? false };
  return {
    evaluate(attrs) {
      for (const { rule, config } of rules) if (ruleMatches(rule, attrs)) return config;
      return fallback;
    },
  };
}

export function ruleMatches(r: PolicyRule, { user, info }: AuditAttributes): boolean {
  if (r.users?.length && (!user || !r.users.includes(user.username))) return false;
  if (r.userGroups?.length && (!user || !user.groups.some((g) => r.userGroups!.includes(g)))) return false;
  if (r.verbs?.length && !r.verbs.includes(info.verb)) return false;
  if (r.namespaces?.length || r.resources?.length) return matchesResource(r, info);
  if (r.nonResourceURLs?.length) return !info.isResourceRequest && r.nonResourceURLs.some((spec) => pathMatches(info.path, spec));
  return true;
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  // strings.TrimRight(spec, "*"): every trailing star goes.
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function matchesResource(r: PolicyRule, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  // Non-namespaced resources use the empty string.
  if (r.namespaces?.length && !r.namespaces.includes(info.namespace)) return false;
  if (!r.resources?.length) return true;
  const { resource, subresource, name } = info;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const gr of r.resources) {
    if ((gr.group ?? '') !== info.apiGroup) continue;
    if (!gr.resources?.length) return true;
    for (const res of gr.resources) {
      if (gr.resourceNames?.length && !gr.resourceNames.includes(name)) continue;
      if (res === combined || res === '*') return true;
      if (subresource && res.startsWith('*/') && subresource === res.slice(2)) return true;
      if (res.endsWith('/*') && resource === res.slice(0, -2)) return true;
    }
  }
  return false;
}
