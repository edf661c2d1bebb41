// The create/update/delete rules of a stored resource (rest.RESTCreateStrategy & co., and the
// customresource strategy they default to): server-owned metadata, schema + metadata validation,
// generation, garbage-collector finalizers.
import type { FieldValidation } from '../../apimachinery/fieldValidation.js';
import { strictDecodingError } from '../../apimachinery/fieldValidation.js';
import { bumpGeneration, prepareForCreate, prepareForUpdate, validateMeta, validateMetaUpdate } from '../../apimachinery/meta.js';
import type { DeleteOptions } from '../../apimachinery/options.js';
import type { Pacer } from '../../apimachinery/pacer.js';
import { errors, FieldError } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { ResourceDescriptor } from '../resource.js';
import { validateObject } from '../validation.js';

export interface Strategy {
  /** Foreground/Orphan finalizers only make sense when a garbage collector will remove them. */
  garbageCollection: boolean;
  now: () => Date;
  /** Names for generateName (default: prefix + 5 random characters). */
  generateName?: (prefix: string) => string;
}

export interface ValidationInput {
  obj: KubeObject;
  old?: KubeObject;
  fieldValidation: FieldValidation;
  /** Decoding findings of the body (duplicate fields, a patch's unknown fields). */
  findings: readonly string[];
  /** A patch's strict failure is a 422 on the patch; a create/update body's is a 400 decoding error. */
  patch: boolean;
}

export class ObjectRules {
  constructor(private readonly def: ResourceDescriptor, readonly strategy: Strategy) {}

  prepareForCreate(obj: KubeObject): KubeObject {
    return prepareForCreate(obj, this.strategy.now(), this.strategy.generateName);
  }

  /** Keeps what an update may not change; generation moves with the spec, compared after validation. */
  async prepareForUpdate(pace: Pacer, warnings: string[], input: ValidationInput & { old: KubeObject }): Promise<KubeObject> {
    const valid = await this.validate(pace, warnings, { ...input, obj: prepareForUpdate(input.obj, input.old) });
    await pace.breathe();
    return bumpGeneration(valid, input.old);
  }

  /**
   * Schema + metadata validation; decoding findings (duplicate and unknown fields) per fieldValidation:
   * Strict → 400 (422 for a patch), Warn → collected as warnings, Ignore → dropped.
   */
  async validate(pace: Pacer, warnings: string[], { obj, old, fieldValidation, findings: bodyFindings, patch }: ValidationInput): Promise<KubeObject> {
    const def = this.def;
    await pace.breathe();
    const result = validateObject(def, obj);
    await pace.breathe();
    if (fieldValidation !== 'Ignore') {
      const findings = [...bodyFindings, ...result.unknownFields.map((f) => `unknown field "${f}"`)];
      if (findings.length && fieldValidation === 'Strict') {
        if (patch) throw strictDecodingError(obj, findings);
        throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${findings.join(', ')}`);
      }
      // A loop, not push(...findings): a body can carry 200k unknown fields, past the argument limit.
      for (const f of findings) warnings.push(f);
    }
    const fieldErrors = [...result.errors, ...validateMeta(obj.metadata, def.namespaced)];
    await pace.breathe();
    if (old) fieldErrors.push(...validateMetaUpdate(obj.metadata, old.metadata));
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
