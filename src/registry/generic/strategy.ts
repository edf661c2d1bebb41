// The create/update/delete rules of a stored resource (rest.RESTCreateStrategy & co., and the
// customresource strategy they default to): server-owned metadata, schema + metadata validation,
// generation, garbage-collector finalizers; with a status subresource, which fields each entry point
// may change (customresource strategy.go and status_strategy.go).
import type { FieldValidation } from '../../apimachinery/fieldValidation.js';
import { strictDecodingError, strictDecodingWarnings } from '../../apimachinery/fieldValidation.js';
import { bumpGeneration, differsBesidesStatus, keepStoredStatus, prepareForCreate, prepareForUpdate, statusOnlyUpdate, validateMeta, validateMetaUpdate, withoutStatus } from '../../apimachinery/meta.js';
import type { DeleteOptions } from '../../apimachinery/options.js';
import type { Pacer } from '../../apimachinery/pacer.js';
import { errors, FieldError } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { hasStatusSubresource, type ResourceDescriptor } from '../resource.js';
import { validateObject } from '../validation.js';

export interface Strategy {
  /** Foreground/Orphan finalizers only make sense when a garbage collector will remove them. */
  garbageCollection: boolean;
  now: () => Date;
  /** Names for generateName (default: prefix + 5 random characters). */
  generateName?: (prefix: string) => string;
  /**
   * The subresource whose rules updates follow: 'status' is upstream's status strategy (the status
   * store is the main store with it). Absent: the main resource.
   */
  subresource?: 'status';
}

/** A field path as structured-merge-diff writes one (fieldpath.MakePathOrDie("status") = ['status']). */
export type FieldPath = readonly string[];

/**
 * GetResetFields per entry point ('' = the main resource, 'status' = /status): the fields a write there
 * cannot change, which the field manager must not record as owned by the writer. Upstream's values for a
 * CRD (customresource strategy.go, status_strategy.go): the main resource resets `status` when the status
 * subresource exists; /status resets only `spec` — its metadata changes are discarded but still owned,
 * as kube-apiserver records them (the SSA oracle shows it).
 */
export type ResetFields = Readonly<Record<'' | 'status', readonly FieldPath[]>>;

export function resetFieldsOf(def: Pick<ResourceDescriptor, 'subresources'>): ResetFields {
  if (!hasStatusSubresource(def)) return { '': [], status: [] };
  return { '': [['status']], status: [['spec']] };
}

export interface ValidationInput {
  obj: KubeObject;
  old?: KubeObject;
  fieldValidation: FieldValidation;
  /** Decoding findings of the body (duplicate fields, a patch's unknown fields). */
  findings: readonly string[];
  /** A patch's strict failure is a 422 on the patch; a create/update body's is a 400 decoding error. */
  patch: boolean;
  /** The object as the request made it, when `obj` has parts reset from elsewhere: its unknown fields are reported. */
  sent?: KubeObject;
  /** The result of a server-side apply (not decoded from a body: its nulls stay and fail validation). */
  applied?: boolean;
}

export class ObjectRules {
  constructor(private readonly def: ResourceDescriptor, readonly strategy: Strategy) {
  }

  /**
   * Server-owned metadata of a new object. With a status subresource create cannot set status
   * (PrepareForCreate): validate() drops it, once the unknown fields in it are reported.
   */
  prepareForCreate(obj: KubeObject): KubeObject {
    return prepareForCreate(obj, this.strategy.now(), this.strategy.generateName);
  }

  /**
   * Keeps what an update may not change; generation moves with the spec, compared after validation.
   * Through /status only `.status` (and managedFields) come from the request; with a status subresource
   * the main resource keeps the stored status. Unknown fields are still those of the object as sent:
   * upstream prunes (and reports) them while decoding, before the strategy resets anything.
   */
  async prepareForUpdate(pace: Pacer, warnings: string[], input: ValidationInput & { old: KubeObject }): Promise<KubeObject> {
    if (this.strategy.subresource === 'status') {
      const obj = statusOnlyUpdate(input.obj, input.old);
      // The stored object's metadata and spec: nothing there moves, generation included.
      return this.validate(pace, warnings, { ...input, obj, sent: differsBesidesStatus(input.obj, obj) ? input.obj : undefined });
    }
    const prepared = prepareForUpdate(input.obj, input.old);
    const obj = hasStatusSubresource(this.def) ? keepStoredStatus(prepared, input.old) : prepared;
    const valid = await this.validate(pace, warnings, { ...input, obj, sent: obj === prepared ? undefined : prepared });
    await pace.breathe();
    return bumpGeneration(valid, input.old);
  }

  /**
   * Schema + metadata validation; decoding findings (duplicate and unknown fields) per fieldValidation:
   * Strict → 400 (422 for a patch), Warn → collected as warnings, Ignore → dropped.
   */
  async validate(pace: Pacer, warnings: string[], input: ValidationInput): Promise<KubeObject> {
    const def = this.def;
    const { old, fieldValidation, findings: bodyFindings, patch } = input;
    let { obj, sent } = input;
    // No old object: a create, which cannot set status when the status subresource exists.
    if (!old && hasStatusSubresource(def) && Object.hasOwn(obj, 'status')) {
      sent = obj;
      obj = withoutStatus(obj);
    }
    await pace.breathe();
    const result = validateObject(def, obj, { keepNulls: input.applied });
    await pace.breathe();
    if (fieldValidation !== 'Ignore') {
      const unknownFields = sent ? validateObject(def, sent).unknownFields : result.unknownFields;
      const findings = [...bodyFindings, ...unknownFields.map((f) => `unknown field "${f}"`)];
      if (findings.length && fieldValidation === 'Strict') {
        if (patch) throw strictDecodingError(obj, findings);
        throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${findings.join(', ')}`);
      }
      // A loop, not push(...findings): a body can carry 200k unknown fields, past the argument limit.
      for (const f of findings) for (const w of strictDecodingWarnings(f)) warnings.push(w);
    }
    // rest.BeforeUpdate checks the metadata update (validateCommonFields) before the strategy's validation.
    const fieldErrors = old ? validateMetaUpdate(obj.metadata, old.metadata) : [];
    fieldErrors.push(...result.errors, ...validateMeta(obj.metadata, def.namespaced));
    await pace.breathe();
    // Like CEL rules after a schema failure, the typed checks only look at a schema-valid object.
    if (result.value && def.validate) fieldErrors.push(...def.validate(result.value));
    if (fieldErrors.length || !result.value) {
      throw errors.invalid({ group: def.group, kind: def.kind }, obj.metadata.name ?? '', fieldErrors.length ? fieldErrors : [FieldError.invalid('', '', 'invalid object')]);
    }
    return result.value;
  }

  /**
   * deletionFinalizersForGarbageCollection: "orphan"/"foregroundDeletion" for the garbage collector, decided
   * by orphanDependents (explicit, it overrides all), then propagationPolicy, then the object's own.
   */
  finalizersAfterDelete(existing: string[], opts: DeleteOptions): string[] {
    if (!this.strategy.garbageCollection) return existing;
    const own = existing.find((f) => f === 'orphan' || f === 'foregroundDeletion');
    const policy = opts.propagationPolicy;
    const orphan = opts.orphanDependents ?? (policy ? policy === 'Orphan' : own === 'orphan');
    const foreground = opts.orphanDependents === undefined && (policy ? policy === 'Foreground' : own === 'foregroundDeletion');
    const kept = existing.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion');
    const next = [...kept, ...(orphan ? ['orphan'] : []), ...(foreground ? ['foregroundDeletion'] : [])];
    // The same set is no change: the object keeps its own order.
    const before = new Set(existing);
    return next.length === before.size && next.every((f) => before.has(f)) ? existing : next;
  }
}
