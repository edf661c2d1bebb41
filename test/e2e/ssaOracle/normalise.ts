// What of an answer is compared: the status code; for an object all of it except uid, resourceVersion,
// creationTimestamp and managedFields[].time (and deletionTimestamp's value: a time, compared as set or
// not); for a Status its reason, code, message and details.causes. The target's group is written as
// farm.example.com everywhere it shows (apiVersion, managedFields apiVersion, messages).
import type { HttpsResult } from '../e2e.helpers.js';

export const CANONICAL_GROUP = 'farm.example.com';

export interface Answer {
  status: number;
  body: unknown;
  /** managedFields[].time in whole seconds (upstream orders entries by it), in the answer's order. */
  managedFieldsSeconds?: Array<number | undefined>;
}

type Json = Record<string, unknown>;
const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function replaceGroup(v: unknown, group: string): unknown {
  if (group === CANONICAL_GROUP) return v;
  if (typeof v === 'string') return v.split(group).join(CANONICAL_GROUP);
  if (Array.isArray(v)) return v.map((x) => replaceGroup(x, group));
  if (isMap(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, replaceGroup(x, group)]));
  return v;
}

const groupOf = (apiVersion: unknown, group: string): unknown =>
  typeof apiVersion === 'string' && apiVersion.startsWith(`${group}/`) ? CANONICAL_GROUP + apiVersion.slice(group.length) : apiVersion;

/**
 * Upstream lists FieldManagerConflict causes manager by manager in Go map order (random; structured-
 * merge-diff's ConflictsFromManagers), each manager's paths sorted; its message sorts the managers by
 * their identifier. A stable sort by the cause's message ("conflict with \"name\"[ using v]") is that
 * order and keeps each manager's path order.
 */
function conflictCausesInOrder(causes: unknown): unknown {
  if (!Array.isArray(causes) || !causes.every((c) => isMap(c) && c.reason === 'FieldManagerConflict')) return causes;
  return [...(causes as Json[])].sort((p, q) => (String(p.message) < String(q.message) ? -1 : String(p.message) > String(q.message) ? 1 : 0));
}

/**
 * structured-merge-diff lists the errors of a typed value ("errors:\n  .a: …\n  .b: …") in Go map
 * order when they come from different fields (seen: an unknown spec field with a duplicate
 * ownerReferences key, in either order from one kube-apiserver), so the lines are compared sorted.
 */
function errorListInOrder(message: unknown): unknown {
  if (typeof message !== 'string') return message;
  return message.replace(/errors:\n((?: {2}[^\n]*(?:\n|$))+)/g, (_all, lines: string) => {
    const end = lines.endsWith('\n') ? '\n' : '';
    return `errors:\n${lines.replace(/\n$/, '').split('\n').sort().join('\n')}${end}`;
  });
}

/**
 * applyPatcher's decoding errors began "error decoding YAML: " and "error strict decoding YAML: " until
 * kubernetes 1.37 (k8s.io/apiserver 26acd6dd9, "Fix patch request audit logging"), "…patch: " since; we
 * follow the newer wording, the oracle's kube-apiserver may have the older.
 */
const applyDecodingWording = (message: unknown): unknown =>
  typeof message === 'string' ? message.replace(/^error (strict )?decoding YAML: /, 'error $1decoding patch: ') : message;

export function normalise(res: HttpsResult, group: string): Answer {
  const json: unknown = res.json;
  if (!isMap(json)) return { status: res.status, body: replaceGroup(res.body, group) };
  if (json.kind === 'Status') {
    const details = isMap(json.details) ? json.details : {};
    return {
      status: res.status,
      body: replaceGroup({ kind: 'Status', status: json.status, reason: json.reason, code: json.code, message: errorListInOrder(applyDecodingWording(json.message)), causes: conflictCausesInOrder(details.causes) }, group),
    };
  }
  const obj = structuredClone(json);
  obj.apiVersion = groupOf(obj.apiVersion, group);
  let seconds: Array<number | undefined> | undefined;
  if (isMap(obj.metadata)) {
    const m = obj.metadata;
    delete m.uid; delete m.resourceVersion; delete m.creationTimestamp;
    if (m.deletionTimestamp !== undefined) m.deletionTimestamp = '<set>';
    if (Array.isArray(m.managedFields)) {
      seconds = [];
      m.managedFields = m.managedFields.map((e: unknown) => {
        if (!isMap(e)) return e;
        const { time, ...rest } = e;
        seconds!.push(typeof time === 'string' ? Math.floor(Date.parse(time) / 1000) : undefined);
        return { ...rest, apiVersion: groupOf(rest.apiVersion, group) };
      });
    }
  }
  return { status: res.status, body: obj, ...(seconds ? { managedFieldsSeconds: seconds } : {}) };
}

export interface Mismatch { path: string; oracle: unknown; tested: unknown }

/** The first place two JSON values differ (a path like `body.metadata.labels.app`, and both values there), or undefined. */
export function firstDifference(a: unknown, b: unknown, path = ''): Mismatch | undefined {
  if (Object.is(a, b)) return undefined;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (isMap(a) && isMap(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const d = firstDifference(a[k], b[k], path ? `${path}.${k}` : k);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return { path: path || '(root)', oracle: a, tested: b };
}

/** upstream's order of managedFields (managedfields' sortEncodedManagedFields): operation, time in seconds, manager, apiVersion, subresource. */
function sortedUpstreamWay(entries: Json[], seconds: Array<number | undefined>): boolean {
  const key = (e: Json, s: number | undefined) => [String(e.operation ?? ''), s ?? 0, String(e.manager ?? ''), String(e.apiVersion ?? ''), String(e.subresource ?? '')] as const;
  for (let i = 1; i < entries.length; i++) {
    const p = key(entries[i - 1], seconds[i - 1]);
    const q = key(entries[i], seconds[i]);
    for (let j = 0; j < p.length; j++) {
      if (p[j] < q[j]) break;
      if (p[j] > q[j]) return false;
    }
  }
  return true;
}

const ranks = (s: Array<number | undefined>) => { const d = [...new Set(s.map((x) => x ?? 0))].sort((x, y) => x - y); return s.map((x) => d.indexOf(x ?? 0)); };
/** JSON with map keys sorted: the same entry prints the same whatever its keys' order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isMap(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}
const identity = canonical;

/**
 * Where two answers differ, or undefined. managedFields are compared in order, except when the two
 * targets' writes fell on different sides of a second boundary (their time ranks differ): then the
 * entries are compared as sets, and each answer's order must be upstream's for its own times.
 */
export function compareAnswers(a: Answer, b: Answer): Mismatch | undefined {
  if (isTypedPatch500(a) && b.status === 400) return typedPatchAs400(a, b);
  if (a.status !== b.status) return { path: 'status', oracle: a.status, tested: b.status };
  return compareBodies(a, b);
}

/**
 * The one deliberate difference: an apply configuration that does not fit the schema (an unknown field, a
 * duplicate list key) is a 500 with no reason from kube-apiserver (an untyped error out of the field
 * manager); we answer 400 BadRequest with the same message, since the mistake is the client's.
 */
function isTypedPatch500(a: Answer): boolean {
  return a.status === 500 && isMap(a.body) && a.body.reason === undefined && typeof a.body.message === 'string'
    && a.body.message.startsWith('failed to create typed patch object (');
}

function typedPatchAs400(a: Answer, b: Answer): Mismatch | undefined {
  const tested = isMap(b.body) ? b.body : {};
  if (tested.reason !== 'BadRequest' || tested.code !== 400) return { path: 'body.reason', oracle: 'InternalError→BadRequest', tested: tested.reason };
  const oracleMessage = isMap(a.body) ? a.body.message : undefined;
  return oracleMessage === tested.message ? undefined : { path: 'body.message', oracle: oracleMessage, tested: tested.message };
}

/** How many answers had their managedFields compared as sets (the two writes straddled a second). */
export const comparedAsSets = { count: 0 };

function compareBodies(a: Answer, b: Answer): Mismatch | undefined {
  const aMf = isMap(a.body) && isMap(a.body.metadata) ? a.body.metadata.managedFields : undefined;
  const bMf = isMap(b.body) && isMap(b.body.metadata) ? b.body.metadata.managedFields : undefined;
  if (Array.isArray(aMf) && Array.isArray(bMf) && aMf.length === bMf.length && a.managedFieldsSeconds && b.managedFieldsSeconds
    && JSON.stringify(ranks(a.managedFieldsSeconds)) !== JSON.stringify(ranks(b.managedFieldsSeconds))) {
    comparedAsSets.count++;
    if (!sortedUpstreamWay(bMf as Json[], b.managedFieldsSeconds)) return { path: 'body.metadata.managedFields (order, for its own times)', oracle: aMf, tested: bMf };
    const sortSet = (x: unknown[]) => [...x].sort((p, q) => (identity(p) < identity(q) ? -1 : identity(p) > identity(q) ? 1 : 0));
    const d = firstDifference(sortSet(aMf), sortSet(bMf), 'body.metadata.managedFields(as a set)');
    if (d !== undefined) return d;
    const strip = (body: unknown) => isMap(body) && isMap(body.metadata) ? { ...body, metadata: { ...body.metadata, managedFields: '<compared as a set>' } } : body;
    return firstDifference(strip(a.body), strip(b.body), 'body');
  }
  return firstDifference(a.body, b.body, 'body');
}
