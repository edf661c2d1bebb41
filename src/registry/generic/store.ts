// The generic registry store (k8s.io/apiserver pkg/registry/generic/registry/store.go with
// rest/create.go, update.go, delete.go): Kubernetes write semantics over any Storage backend.
import { rfc3339 } from '../../apimachinery/meta.js';
import type { DeleteOptions, ListOptions, WriteOptions } from '../../apimachinery/options.js';
import { Pacer } from '../../apimachinery/pacer.js';
import { ApiError, errors, FieldError } from '../../apimachinery/status.js';
import { GoLiteral } from '../../apimachinery/goCompat.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { Entry, Storage } from '../../storage/interfaces.js';
import type { ResourceDescriptor } from '../resource.js';
import type { CollectionDeleter, Creater, Decoded, GracefulDeleter, RequestContext, UpdatedObjectInfo, UpdateOptions, Updater, WriteResult } from '../rest.js';
import { DryRunnableStorage } from './dryRun.js';
import { ReadOnlyStore } from './readOnlyStore.js';
import { interpreted, MODIFIED } from './storageErrors.js';
import { ObjectRules, type Strategy } from './strategy.js';

/** maxNameGenerationCreateAttempts: 1 million names per prefix with a 0.1% chance of any conflict. */
const MAX_NAME_GENERATION_ATTEMPTS = 8;

/** Thrown out of a try-update whose result removed the last finalizer of an object being deleted. */
class EmptiedFinalizers { constructor(readonly uid: string | undefined, readonly warnings: string[]) {} }

export class Store extends ReadOnlyStore implements Creater, Updater, GracefulDeleter, CollectionDeleter {
  private readonly storage: DryRunnableStorage;
  private readonly rules: ObjectRules;

  constructor(def: ResourceDescriptor, storage: Storage, strategy: Strategy) {
    super(def, storage);
    this.storage = new DryRunnableStorage(storage);
    this.rules = new ObjectRules(def, strategy);
  }

  async create(ctx: RequestContext, body: Decoded, opts: WriteOptions): Promise<WriteResult> {
    // A generated name that is taken is drawn again (store.go's createWithGenerateNameRetry).
    const generated = !body.object.metadata.name && !!body.object.metadata.generateName;
    for (let attempt = 1; ; attempt++) {
      const warnings: string[] = [];
      const pace = new Pacer();
      const obj = await this.rules.validate(pace, warnings, {
        obj: this.rules.prepareForCreate(body.object), fieldValidation: opts.fieldValidation, findings: body.findings, patch: false,
      });
      const name = obj.metadata.name!;
      try {
        const entry = await interpreted(this.gr, name, () => this.storage.create(this.keyFor(ctx, name), obj, opts.dryRun));
        return { entry, warnings };
      } catch (e) {
        const taken = e instanceof ApiError && e.reason === 'AlreadyExists';
        if (!generated || !taken || attempt >= MAX_NAME_GENERATION_ATTEMPTS) throw e;
      }
    }
  }

  async update(ctx: RequestContext, name: string, objInfo: UpdatedObjectInfo, opts: UpdateOptions): Promise<WriteResult & { created: boolean }> {
    const key = this.keyFor(ctx, name);
    try {
      const { entry, created, result } = await interpreted(this.gr, name, () => this.storage.guaranteedUpdate(key, async (current) => {
        // No create-on-update: a missing object is NotFound before anything else.
        if (!current) throw errors.notFound(this.gr, name);
        const warnings: string[] = [];
        const { next, uid } = await this.updatedObject(current, objInfo, opts, warnings, name);
        // Removing the last finalizer of an object being deleted completes the deletion (below).
        if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) throw new EmptiedFinalizers(uid, warnings);
        return { object: next, result: warnings };
      }, opts.dryRun));
      return { entry, created, warnings: result };
    } catch (e) {
      if (!(e instanceof EmptiedFinalizers)) throw e;
      // deleteWithoutFinalizers: what is deleted (and reported) is the last stored state, with only the
      // request's own preconditions (DefaultUpdatedObjectInfo: a PUT body's uid; none for a patch).
      const entry = await interpreted(this.gr, name, () => this.storage.delete(key, { uid: e.uid }, opts.dryRun));
      return { entry, created: false, warnings: e.warnings };
    }
  }

  /** The object an update stores: the caller's, checked against the current one, prepared and validated. */
  private async updatedObject(current: Entry, objInfo: UpdatedObjectInfo, opts: UpdateOptions, warnings: string[], name: string): Promise<{ next: KubeObject; uid?: string }> {
    const { object, findings } = await objInfo(current.object);
    const uid = opts.patch ? undefined : object.metadata.uid;
    const rv = object.metadata.resourceVersion;
    // A PUT without resourceVersion is Invalid, worded with the resource as kind and Go's %#v of uint64(0).
    if (!rv && !opts.patch) {
      throw errors.invalid({ group: this.def.group, kind: this.def.plural }, name,
        [FieldError.invalid('metadata.resourceVersion', new GoLiteral('0x0'), 'must be specified for an update')]);
    }
    // Optimistic concurrency first (as upstream), then the new object is prepared and validated.
    if (rv && rv !== current.object.metadata.resourceVersion) throw errors.conflict(this.gr, name, MODIFIED);
    const next = await this.rules.prepareForUpdate(new Pacer(), warnings, {
      obj: object, old: current.object, fieldValidation: opts.fieldValidation, findings, patch: opts.patch,
    });
    return { next, uid };
  }

  async delete(ctx: RequestContext, name: string, opts: DeleteOptions, dryRun: boolean): Promise<{ entry: Entry; deleted: boolean }> {
    const key = this.keyFor(ctx, name);
    const current = await this.reader.get(key);
    if (!current) throw errors.notFound(this.gr, name);
    this.checkPreconditions(current, name, opts);
    if (this.rules.finalizersAfterDelete(current.object.metadata.finalizers ?? [], opts).length === 0) {
      const entry = await interpreted(this.gr, name, () => this.storage.delete(key, opts.preconditions ?? {}, dryRun));
      return { entry, deleted: true };
    }
    // Finalizers keep it: mark it for deletion instead (updateForGracefulDeletionAndFinalizers).
    const { entry, result: deleteNow } = await interpreted(this.gr, name, () => this.storage.guaranteedUpdate(key, async (latest) => {
      if (!latest) throw errors.notFound(this.gr, name);
      this.checkPreconditions(latest, name, opts);
      const marked = this.markedForDeletion(latest.object, opts);
      return marked ? { object: marked, result: false } : { object: latest.object, result: true };
    }, dryRun, { allowGrowthPastLimit: true }));
    if (!deleteNow) return { entry, deleted: false };
    const deleted = await interpreted(this.gr, name, () => this.storage.delete(key, opts.preconditions ?? {}, dryRun));
    return { entry: deleted, deleted: true };
  }

  /** The object with its deletion recorded, or undefined when no finalizer is left to wait for. */
  private markedForDeletion(obj: KubeObject, opts: DeleteOptions): KubeObject | undefined {
    const meta = obj.metadata;
    const finalizers = this.rules.finalizersAfterDelete(meta.finalizers ?? [], opts);
    if (finalizers.length === 0) return undefined;
    if (meta.deletionTimestamp && sameSet(finalizers, meta.finalizers ?? [])) return obj; // already being deleted
    return {
      ...obj,
      metadata: {
        ...meta,
        finalizers,
        // markAsDeleting: the first deletionTimestamp bumps a set generation.
        ...(!meta.deletionTimestamp && meta.generation ? { generation: meta.generation + 1 } : {}),
        deletionTimestamp: meta.deletionTimestamp ?? rfc3339(this.rules.strategy.now()),
        deletionGracePeriodSeconds: meta.deletionGracePeriodSeconds ?? 0,
      },
    };
  }

  /** rest.BeforeDelete checks preconditions first, naming the Kind (not the resource) in the Conflict. */
  private checkPreconditions(current: Entry, name: string, opts: DeleteOptions): void {
    const meta = current.object.metadata;
    const pre = opts.preconditions;
    const gk = { group: this.gr.group, resource: current.object.kind };
    if (pre?.uid && pre.uid !== meta.uid) {
      throw errors.conflict(gk, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${meta.uid ?? ''}). The object might have been deleted and then recreated`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== meta.resourceVersion) {
      throw errors.conflict(gk, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion ?? ''}). The object might have been modified`);
    }
  }

  /** Deletes what the selectors select, one by one; objects deleted meanwhile are skipped. */
  async deleteCollection(ctx: RequestContext, opts: DeleteOptions, dryRun: boolean, listOpts: ListOptions) {
    const listed = await this.list(ctx, { ...listOpts, limit: 0, continue: '' });
    const items: Entry[] = [];
    for (const e of listed.items) {
      try {
        items.push((await this.delete({ namespace: e.object.metadata.namespace }, e.object.metadata.name!, opts, dryRun)).entry);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return { items, resourceVersion: dryRun ? listed.resourceVersion : this.reader.resourceVersion };
  }
}

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const inB = new Set(b);
  return a.every((x) => inB.has(x));
}

