// --audit-policy-file: an audit.k8s.io/v1 Policy read from YAML and validated as upstream does
// (k8s.io/apiserver pkg/audit/policy/reader.go, pkg/apis/audit/validation/validation.go): unknown
// fields are a warning (strict decoding falls back to lenient, reader.go:70-81); a wrong shape, an
// invalid level/stage/URL/group or zero rules stop start-up with upstream's field-path message.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { dns1123SubdomainErrors } from '../../apimachinery/names.js';
import { LEVELS, STAGES, type Level, type Policy, type PolicyRule, type Stage } from './types.js';

export class PolicyError extends Error {}

const strings = z.array(z.string()).nullish();

function schemas(strict: boolean) {
  const obj = strict ? z.strictObject : z.object;
  const groupResources = obj({ group: z.string().nullish(), resources: strings, resourceNames: strings });
  const rule = obj({
    level: z.string().nullish(), users: strings, userGroups: strings, verbs: strings,
    resources: z.array(groupResources).nullish(), namespaces: strings, nonResourceURLs: strings,
    omitStages: strings, omitManagedFields: z.boolean().nullish(),
  });
  return obj({
    apiVersion: z.string().nullish(), kind: z.string().nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    rules: z.array(rule).nullish(), omitStages: strings, omitManagedFields: z.boolean().nullish(),
  });
}
const STRICT = schemas(true);
const LENIENT = schemas(false);
type Decoded = z.infer<typeof LENIENT>;

function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

/** Go's %#v of a []string, as field.Invalid prints a list value. */
const goStrings = (v: readonly string[]) => `[]string{${v.map((s) => JSON.stringify(s)).join(', ')}}`;

function validateOmitStages(stages: readonly string[] | null | undefined, path: string): string[] {
  return (stages ?? []).flatMap((s, i) => (STAGES as readonly string[]).includes(s) ? []
    : [`${path}[${i}]: Invalid value: ${JSON.stringify(s)}: allowed stages are ${STAGES.join(',')}`]);
}

/** validation.go ValidatePolicy, one message per field error. */
function validate(p: Decoded): string[] {
  const errs = validateOmitStages(p.omitStages, 'omitStages');
  (p.rules ?? []).forEach((r, i) => {
    const at = `rules[${i}]`;
    if (!r.level) errs.push(`${at}.level: Required value`);
    else if (!(LEVELS as readonly string[]).includes(r.level)) {
      errs.push(`${at}.level: Unsupported value: ${JSON.stringify(r.level)}: supported values: ${LEVELS.map((l) => `"${l}"`).join(', ')}`);
    }
    (r.nonResourceURLs ?? []).forEach((url, j) => {
      if (url === '*') return;
      if (!url.startsWith('/')) errs.push(`${at}.nonResourceURLs[${j}]: Invalid value: ${JSON.stringify(url)}: non-resource URL rules must begin with a '/' character`);
      if (url !== '' && url.slice(0, -1).includes('*')) errs.push(`${at}.nonResourceURLs[${j}]: Invalid value: ${JSON.stringify(url)}: non-resource URL wildcards '*' must be the final character of the rule`);
    });
    for (const gr of r.resources ?? []) {
      const msgs = gr.group ? dns1123SubdomainErrors(gr.group) : [];
      if (msgs.length) errs.push(`${at}.resources.group: Invalid value: ${JSON.stringify(gr.group)}: ${msgs.join(',')}`);
      if (gr.resourceNames?.length && !gr.resources?.length) {
        errs.push(`${at}.resources.resourceNames: Invalid value: ${goStrings(gr.resourceNames)}: using resourceNames requires at least one resource`);
      }
    }
    errs.push(...validateOmitStages(r.omitStages, `${at}.omitStages`));
    if (r.nonResourceURLs?.length && (r.resources?.length || r.namespaces?.length)) {
      errs.push(`${at}.nonResourceURLs: Invalid value: ${goStrings(r.nonResourceURLs)}: rules cannot apply to both regular resources and non-resource URLs`);
    }
  });
  return errs;
}

const list = <T>(v: readonly T[] | null | undefined): T[] | undefined => (v?.length ? [...v] : undefined);

function toPolicy(p: Decoded): Policy {
  const rules = (p.rules ?? []).map((r): PolicyRule => {
    const rule: PolicyRule = { level: r.level as Level };
    const set = <K extends keyof PolicyRule>(k: K, v: PolicyRule[K] | undefined) => { if (v !== undefined) rule[k] = v; };
    set('users', list(r.users));
    set('userGroups', list(r.userGroups));
    set('verbs', list(r.verbs));
    set('resources', list(r.resources)?.map((g) => ({ group: g.group ?? '', resources: list(g.resources), resourceNames: list(g.resourceNames) })));
    set('namespaces', list(r.namespaces));
    set('nonResourceURLs', list(r.nonResourceURLs));
    set('omitStages', list(r.omitStages) as Stage[] | undefined);
    set('omitManagedFields', r.omitManagedFields ?? undefined);
    return rule;
  });
  return { rules, omitStages: (list(p.omitStages) ?? []) as Stage[], omitManagedFields: p.omitManagedFields ?? false };
}

/** LoadPolicyFromBytes: the policy, or PolicyError; `warnings` lists fields strict decoding refused. */
export function parsePolicy(text: string): { policy: Policy; warnings: string[] } {
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: false });
  } catch (e) {
    throw new PolicyError(`failed decoding: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new PolicyError('failed decoding: expected an audit.k8s.io/v1 Policy object');
  const warnings: string[] = [];
  const strict = STRICT.safeParse(doc);
  let decoded: Decoded;
  if (strict.success) decoded = strict.data;
  else {
    const lenient = LENIENT.safeParse(doc);
    if (!lenient.success) {
      const issue = lenient.error.issues[0]!;
      throw new PolicyError(`failed decoding: ${pathText(issue.path) || 'policy'}: ${issue.message}`);
    }
    for (const issue of strict.error.issues) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
      for (const k of keys) warnings.push(`unknown field "${pathText([...issue.path, k])}"`);
    }
    decoded = lenient.data;
  }
  if (decoded.apiVersion !== 'audit.k8s.io/v1' || decoded.kind !== 'Policy') {
    throw new PolicyError(`failed decoding: apiVersion ${JSON.stringify(decoded.apiVersion ?? '')}, kind ${JSON.stringify(decoded.kind ?? '')}: expected apiVersion audit.k8s.io/v1, kind Policy`);
  }
  const errs = validate(decoded);
  // field.ErrorList.ToAggregate: one error as is, several as "[a, b]".
  if (errs.length === 1) throw new PolicyError(errs[0]!);
  if (errs.length > 1) throw new PolicyError(`[${errs.join(', ')}]`);
  if (!decoded.rules?.length) throw new PolicyError('loaded illegal policy with 0 rules');
  return { policy: toPolicy(decoded), warnings };
}

/** LoadPolicyFromFile's messages: `failed to read file path "…"`, or the decode error `: from file …`. */
export async function loadPolicyFile(path: string): Promise<{ policy: Policy; warnings: string[] }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new PolicyError(`failed to read file path ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    if (e instanceof PolicyError) throw new PolicyError(`${e.message}: from file ${path}`);
    throw e;
  }
}
