// Server-owned ObjectMeta as k8s.io/apiserver's rest.BeforeCreate / BeforeUpdate set and validate it.
import { randomUUID, randomInt } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { dns1123LabelErrors, dns1123SubdomainErrors, labelValueErrors, qualifiedNameErrors } from './names.js';
import { everyValue } from './jsonValue.js';
import { FieldError } from './status.js';
import type { KubeObject, ObjectMeta } from './types.js';

const isString = (x: unknown) => typeof x === 'string';

const totalAnnotationSizeLimit = 256 * 1024;
const generateAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** SimpleNameGenerator: prefix (cut to 58) + 5 random characters. */
export function generateName(prefix: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += generateAlphabet[randomInt(generateAlphabet.length)];
  return prefix.slice(0, 58) + suffix;
}

/** Sets what the server owns on create; the client's values for these are ignored. */
export function prepareForCreate(obj: KubeObject, now: Date, names: (prefix: string) => string = generateName): KubeObject {
  const m: ObjectMeta = { ...obj.metadata };
  if (!m.name && m.generateName) m.name = names(m.generateName);
  m.uid = randomUUID();
  m.creationTimestamp = rfc3339(now);
  m.generation = 1;
  delete m.resourceVersion;
  delete m.deletionTimestamp;
  delete m.deletionGracePeriodSeconds;
  return { ...obj, metadata: m };
}

/** Keeps what an update may not change and bumps generation when anything but metadata/status changed. */
export function prepareForUpdate(next: KubeObject, old: KubeObject): KubeObject {
  const m: ObjectMeta = { ...next.metadata };
  const o = old.metadata;
  if (!m.uid) m.uid = o.uid;
  m.creationTimestamp = o.creationTimestamp;
  m.generation = o.generation ?? 1;
  if (o.deletionTimestamp) m.deletionTimestamp = o.deletionTimestamp;
  else delete m.deletionTimestamp;
  if (o.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds;
  else delete m.deletionGracePeriodSeconds;
  if (m.generateName === undefined && o.generateName !== undefined) m.generateName = o.generateName;
  return { ...next, metadata: m };
}

/**
 * generation +1 when anything but metadata changed (the customresource strategy); compared after
 * defaulting and pruning. With a status subresource the status was reset first, so only spec moves it.
 */
export function bumpGeneration(next: KubeObject, old: KubeObject): KubeObject {
  if (!nonMetadataChanged(next, old)) return next;
  return { ...next, metadata: { ...next.metadata, generation: (old.metadata.generation ?? 1) + 1 } };
}

// ---- the status subresource (customresource strategy.go and status_strategy.go) ----

/** The object without `.status` (create cannot set it when the status subresource exists). */
export function withoutStatus(obj: KubeObject): KubeObject {
  if (!Object.hasOwn(obj, 'status')) return obj;
  const { status: _dropped, ...rest } = obj;
  return rest as KubeObject;
}

/** The main resource's update keeps the stored status (none stored: none kept). Unchanged: the same object. */
export function keepStoredStatus(next: KubeObject, old: KubeObject): KubeObject {
  const had = Object.hasOwn(old, 'status');
  if (had ? isDeepStrictEqual(next.status, old.status) : !Object.hasOwn(next, 'status')) return next;
  return had ? { ...next, status: old.status } : withoutStatus(next);
}

/**
 * An update through /status: the stored object with the request's `.status` (absent: removed) and
 * managedFields (upstream's field manager has recorded the write there by now; a request that carries
 * none keeps the stored ones, as the field manager would); metadata, spec and generation stay.
 */
export function statusOnlyUpdate(next: KubeObject, old: KubeObject): KubeObject {
  const metadata: ObjectMeta = { ...old.metadata };
  if (next.metadata.managedFields !== undefined) metadata.managedFields = next.metadata.managedFields;
  const base = withoutStatus({ ...old, metadata });
  return Object.hasOwn(next, 'status') ? { ...base, status: next.status } : base;
}

/** Whether two objects differ anywhere but in `.status` (what /status ignores from a request). */
export function differsBesidesStatus(a: KubeObject, b: KubeObject): boolean {
  return !isDeepStrictEqual(withoutStatus(a), withoutStatus(b));
}

type JsonType = 'string' | 'integer' | 'map' | 'list' | 'object' | 'boolean';

const metaFieldTypes: Record<string, JsonType> = {
  name: 'string', generateName: 'string', namespace: 'string', uid: 'string', resourceVersion: 'string',
  creationTimestamp: 'string', deletionTimestamp: 'string', generation: 'integer', deletionGracePeriodSeconds: 'integer',
  labels: 'map', annotations: 'map', finalizers: 'list', ownerReferences: 'list', managedFields: 'list',
};

const goTypeOf: Record<JsonType, string> = {
  string: 'string', integer: 'int64', map: 'map[string]string', list: '[]', object: 'struct', boolean: 'bool',
};

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

function fits(v: unknown, t: JsonType): boolean {
  switch (t) {
    case 'string': return typeof v === 'string';
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'boolean': return typeof v === 'boolean';
    case 'list': return Array.isArray(v);
    case 'object': return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'map': return typeof v === 'object' && v !== null && !Array.isArray(v) && everyValue(v, isString);
  }
}

/**
 * ObjectMeta fields of the wrong JSON type, worded like encoding/json's UnmarshalTypeError
 * (upstream fails decoding with 400 before any validation runs); undefined when all fit.
 */
export function metaDecodeError(m: Record<string, unknown>): string | undefined {
  for (const [field, type] of Object.entries(metaFieldTypes)) {
    const v = m[field];
    if (v === undefined || v === null || fits(v, type)) continue;
    return `json: cannot unmarshal ${jsonKind(v)} into Go struct field ObjectMeta.metadata.${field} of type ${goTypeOf[type]}`;
  }
  const listOf = (field: string, item: (x: unknown) => boolean, goType: string) => {
    const bad = ((m[field] ?? []) as unknown[]).find((x) => !item(x));
    return bad === undefined ? undefined : `json: cannot unmarshal ${jsonKind(bad)} into Go struct field ObjectMeta.metadata.${field} of type ${goType}`;
  };
  const ownerRef = (x: unknown) => fits(x, 'object') && ['apiVersion', 'kind', 'name', 'uid'].every((k) => { const v = (x as Record<string, unknown>)[k]; return v === undefined || typeof v === 'string'; })
    && ['controller', 'blockOwnerDeletion'].every((k) => { const v = (x as Record<string, unknown>)[k]; return v === undefined || v === null || typeof v === 'boolean'; });
  return listOf('finalizers', (x) => typeof x === 'string', 'string') ?? listOf('ownerReferences', ownerRef, 'v1.OwnerReference');
}

/** copyNonMetadata + DeepEqual (apiVersion and kind are the resource's after decoding). */
function nonMetadataChanged(a: KubeObject, b: KubeObject): boolean {
  const strip = ({ metadata: _m, apiVersion: _a, kind: _k, ...rest }: KubeObject) => rest;
  return !isDeepStrictEqual(strip(a), strip(b));
}

/** ValidateObjectMeta for a namespaced-or-not object whose names are DNS subdomains. */
export function validateMeta(m: ObjectMeta, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (!m.name) {
    if (!m.generateName) errs.push(FieldError.required('metadata.name', 'name or generateName is required'));
  } else {
    for (const e of dns1123SubdomainErrors(m.name)) errs.push(FieldError.invalid('metadata.name', m.name, e));
  }
  if (m.generateName) {
    for (const e of dns1123SubdomainErrors(m.generateName.replace(/-$/, 'a') || 'a')) errs.push(FieldError.invalid('metadata.generateName', m.generateName, e));
  }
  if (namespaced && !m.namespace) errs.push(FieldError.required('metadata.namespace', ''));
  else if (namespaced && m.namespace) {
    for (const e of dns1123LabelErrors(m.namespace)) errs.push(FieldError.invalid('metadata.namespace', m.namespace, e));
  }
  if (!namespaced && m.namespace) errs.push(FieldError.forbidden('metadata.namespace', 'not allowed on this type'));
  errs.push(...validateLabels(m.labels), ...validateAnnotations(m.annotations));
  (m.finalizers ?? []).forEach((f, i) => {
    for (const e of qualifiedNameErrors(f)) errs.push(FieldError.invalid(`metadata.finalizers[${i}]`, f, e));
  });
  if (m.finalizers?.includes('orphan') && m.finalizers.includes('foregroundDeletion')) {
    errs.push(FieldError.invalid('metadata.finalizers', 'foregroundDeletion', 'finalizer foregroundDeletion and orphan cannot be both set'));
  }
  (m.ownerReferences ?? []).forEach((r, i) => {
    const p = `metadata.ownerReferences[${i}]`;
    if (!r.apiVersion) errs.push(FieldError.invalid(`${p}.apiVersion`, r.apiVersion ?? '', 'version must not be empty'));
    if (!r.kind) errs.push(FieldError.invalid(`${p}.kind`, r.kind ?? '', 'kind must not be empty'));
    if (!r.name) errs.push(FieldError.invalid(`${p}.name`, r.name ?? '', 'name must not be empty'));
    if (!r.uid) errs.push(FieldError.invalid(`${p}.uid`, r.uid ?? '', 'uid must not be empty'));
  });
  if ((m.ownerReferences ?? []).filter((r) => r.controller).length > 1) {
    errs.push(FieldError.invalid('metadata.ownerReferences', m.ownerReferences, 'Only one reference can have Controller set to true'));
  }
  return errs;
}

export function validateMetaUpdate(next: ObjectMeta, old: ObjectMeta): FieldError[] {
  const errs: FieldError[] = [];
  if (next.uid !== old.uid) errs.push(FieldError.invalid('metadata.uid', next.uid, 'field is immutable'));
  if (old.deletionTimestamp) {
    const had = new Set(old.finalizers ?? []);
    const added = (next.finalizers ?? []).filter((f) => !had.has(f));
    const e = FieldError.forbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`);
    // Twice, as kube reports it: rest.BeforeUpdate's common-field check and the strategy's ValidateUpdate
    // both run ValidateObjectMetaAccessorUpdate.
    if (added.length) errs.push(e, e);
  }
  return errs;
}

function validateLabels(labels: Record<string, string> | undefined): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const e of qualifiedNameErrors(k)) errs.push(FieldError.invalid('metadata.labels', k, e));
    if (typeof v !== 'string') errs.push(FieldError.typeInvalid(`metadata.labels.${k}`, v, 'must be a string'));
    else for (const e of labelValueErrors(v)) errs.push(FieldError.invalid('metadata.labels', v, e));
  }
  return errs;
}

function validateAnnotations(annotations: Record<string, string> | undefined): FieldError[] {
  const errs: FieldError[] = [];
  // Go's len() counts bytes; UTF-8 has at least as many bytes as UTF-16 units, so the units decide
  // "too long" when they already pass the limit, and bytes are counted only below it.
  let units = 0;
  for (const k in annotations) {
    if (!Object.prototype.hasOwnProperty.call(annotations, k)) continue;
    for (const e of qualifiedNameErrors(k.toLowerCase())) errs.push(FieldError.invalid('metadata.annotations', k, e));
    units += k.length + String(annotations[k]).length;
  }
  let size = units;
  if (units <= totalAnnotationSizeLimit) {
    size = 0;
    for (const [k, v] of Object.entries(annotations ?? {})) size += Buffer.byteLength(k) + Buffer.byteLength(String(v));
  }
  if (size > totalAnnotationSizeLimit) errs.push(new FieldError('FieldValueTooLong', 'metadata.annotations', `must have at most ${totalAnnotationSizeLimit} bytes`, '', false));
  return errs;
}
