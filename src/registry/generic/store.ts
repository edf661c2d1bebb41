// The generic registry store (k8s.io/apiserver pkg/registry/generic/registry/store.go with
// rest/create.go, update.go, delete.go): Kubernetes write semantics over any Storage backend.
import { rfc3339 } from '../../apimachinery/meta.js';
import type { DeleteOptions, ListOptions, WriteOptions } from '../../apimachinery/options.js';
import { Pacer } from '../../apimachinery/pacer.js';
import { waitForTurn } from '../../apimachinery/turns.js';
import { ApiError, errors, FieldError } from '../../apimachinery/status.js';
import { GoLiteral } from '../../apimachinery/goCompat.js';
import { withManaged, type FieldManager } from '../../apimachinery/managedfields/fieldManager.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { Entry, ListResult, Storage } from '../../storage/interfaces.js';
import { stamped } from '../../storage/objects.js';
import type { ResourceDescriptor } from '../resource.js';
import type { CollectionDeleter, Creater, Decoded, GracefulDeleter, RequestContext, UpdatedObjectInfo, UpdateOptions, Updater, WriteResult } from '../rest.js';
import { DryRunnableStorage } from './dryRun.js';
import { fieldManagerFor } from './fieldManagers.js';
import { ReadOnlyStore } from './readOnlyStore.js';
import { interpreted, MODIFIED } from './storageErrors.js';
import { ObjectRules, type Strategy } from './strategy.js';

/** maxNameGenerationCreateAttempts: 1 million names per prefix with a 0.1% chance of any conflict. */
const MAX_NAME_GENERATION_ATTEMPTS = 8;
/** deleteCollectionPageSize: a collection is listed for deletion in pages of this many objects. */
const DELETE_COLLECTION_PAGE_SIZE = 10_000;

/** Thrown out of a try-update whose result removed the last finalizer of an object being deleted. */
class EmptiedFinalizers { constructor(readonly uid: string | undefined, readonly warnings: string[], readonly updated: Entry) {} }

export class Store extends ReadOnlyStore implements Creater, Updater, GracefulDeleter, CollectionDeleter {
  private readonly storage: DryRunnableStorage;
  private readonly rules: ObjectRules;
  private manager: FieldManager | undefined;

  constructor(def: ResourceDescriptor, storage: Storage, strategy: Strategy) {
    super(def, storage);
    this.storage = new DryRunnableStorage(storage, this.resourceName);
    this.rules = new ObjectRules(def, strategy);
  }

  /**
   * Every write records its managed fields through it; server-side apply merges with it. Made at the
   * first write: its type model (the registered schemas as structured-merge-diff atoms) is ~13 ms of a start.
   */
  get fieldManager(): FieldManager {
    return this.manager ??= fieldManagerFor(this.def, this.rules.strategy.subresource ?? '', this.rules.strategy.now);
  }

  async create(ctx: RequestContext, body: Decoded, opts: WriteOptions): Promise<WriteResult> {
    try {
      return await this.createOnce(ctx, body, opts, true);
    } catch (e) {
      // Too large to store: managedFields (which can be large) are dropped and it is tried again (create.go).
      if (!isTooLarge(e)) throw e;
      return this.createOnce(ctx, body, opts, false);
    }
  }

  private async createOnce(ctx: RequestContext, body: Decoded, opts: WriteOptions, track: boolean): Promise<WriteResult> {
    // A generated name that is taken is drawn again (store.go's createWithGenerateNameRetry).
    const generated = !body.object.metadata.name && !!body.object.metadata.generateName;
    for (let attempt = 1; ; attempt++) {
      const warnings: string[] = [];
      const pace = new Pacer();
      const valid = await this.rules.validate(pace, warnings, {
        obj: this.rules.prepareForCreate(body.object), fieldValidation: opts.fieldValidation, findings: body.findings, patch: false,
      });
      const obj = track ? await this.fieldManager.update(undefined, valid, opts.fieldManager ?? '', pace) : withoutManagedFields(valid);
      const name = obj.metadata.name!;
      try {
        const entry = await interpreted(this.gr, name, () => this.storage.create(this.keyFor(ctx, name), obj, opts.dryRun));
        return { entry, warnings };
      } catch (e) {
        const taken = e instanceof ApiError && e.reason === 'AlreadyExists';
        if (generated && taken && attempt < MAX_NAME_GENERATION_ATTEMPTS) continue;
        if (taken && (await this.reader.get(this.keyFor(ctx, name)))?.object.metadata.deletionTimestamp) {
          throw new ApiError(e.code, e.reason, `object is being deleted: ${e.message}`, e.details);
        }
        throw e;
      }
    }
  }

  async update(ctx: RequestContext, name: string, objInfo: UpdatedObjectInfo, opts: UpdateOptions): Promise<WriteResult & { created: boolean }> {
    try {
      return await this.updateOnce(ctx, name, objInfo, opts, true);
    } catch (e) {
      // As for a create, except for an apply (whose managedFields are the point of it: patch.go).
      if (!isTooLarge(e) || opts.createInfo) throw e;
      return this.updateOnce(ctx, name, objInfo, opts, false);
    }
  }

  private async updateOnce(ctx: RequestContext, name: string, objInfo: UpdatedObjectInfo, opts: UpdateOptions, track: boolean): Promise<WriteResult & { created: boolean }> {
    const key = this.keyFor(ctx, name);
    try {
      const { entry, created, result } = await interpreted(this.gr, name, () => this.storage.guaranteedUpdate(key, async (current) => {
        const warnings: string[] = [];
        // Only an apply creates on update (forceAllowCreate); otherwise a missing object is NotFound first.
        if (!current) {
          // A subresource never creates (StatusREST passes forceAllowCreate=false).
          if (!opts.createInfo || this.rules.strategy.subresource) throw errors.notFound(this.gr, name);
          return { object: await this.createdByUpdate(opts.createInfo, opts, warnings), result: warnings };
        }
        const { next, uid } = await this.updatedObject(current, objInfo, opts, warnings, name, track);
        // Removing the last finalizer of an object being deleted completes the deletion (below).
        if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) throw new EmptiedFinalizers(uid, warnings, stamped(key, next, current.rv));
        return { object: next, result: warnings };
      }, opts.dryRun));
      return { entry, created, warnings: result };
    } catch (e) {
      if (!(e instanceof EmptiedFinalizers)) throw e;
      // deleteWithoutFinalizers: the last stored state is deleted, with only the request's own preconditions
      // (DefaultUpdatedObjectInfo: a PUT body's uid; none for a patch); the client is answered with the
      // object its update asked for ("clients are expecting an updated object if a PUT succeeded").
      await interpreted(this.gr, name, () => this.storage.delete(key, { uid: e.uid }, opts.dryRun));
      return { entry: e.updated, created: false, warnings: e.warnings };
    }
  }

  /** The object an apply to a missing name creates: prepared and validated as a create. */
  private async createdByUpdate(createInfo: () => Promise<Decoded>, opts: UpdateOptions, warnings: string[]): Promise<KubeObject> {
    const { object, findings, managed } = await createInfo();
    return this.rules.validate(new Pacer(), warnings, {
      obj: this.rules.prepareForCreate(object), fieldValidation: opts.fieldValidation, findings, patch: opts.patch, applied: managed,
    });
  }

  /** The object an update stores: the caller's, checked against the current one, prepared, validated, its fields recorded. */
  private async updatedObject(current: Entry, objInfo: UpdatedObjectInfo, opts: UpdateOptions, warnings: string[], name: string, track: boolean): Promise<{ next: KubeObject; uid?: string }> {
    const { object, findings, managed } = await objInfo(current.object);
    const uid = opts.patch ? undefined : object.metadata.uid;
    const rv = object.metadata.resourceVersion;
    // A PUT without resourceVersion is Invalid, worded with the resource as kind and Go's %#v of uint64(0).
    if (!rv && !opts.patch) {
      throw errors.invalid({ group: this.def.group, kind: this.def.plural }, name,
        [FieldError.invalid('metadata.resourceVersion', new GoLiteral('0x0'), 'must be specified for an update')]);
    }
    // Optimistic concurrency first (as upstream), then the new object is prepared and validated.
    if (rv && rv !== current.object.metadata.resourceVersion) throw errors.conflict(this.gr, name, MODIFIED);
    const pace = new Pacer();
    const prepared = await this.rules.prepareForUpdate(pace, warnings, {
      obj: object, old: current.object, fieldValidation: opts.fieldValidation, findings, patch: opts.patch, applied: managed,
    });
    // An apply recorded its fields already; any other write is an Update of its manager.
    const next = !track ? withoutManagedFields(prepared) : managed ? prepared : await this.recordUpdate(current.object, object, prepared, opts.fieldManager ?? '', pace);
    return { next, uid };
  }

  /**
   * The Update entry of a write. Through /status upstream records what the request asked for before the
   * status strategy kept only its .status (so a label change there is owned, though discarded).
   */
  private async recordUpdate(live: KubeObject, requested: KubeObject, prepared: KubeObject, manager: string, pace: Pacer): Promise<KubeObject> {
    if (this.rules.strategy.subresource !== 'status') return this.fieldManager.update(live, prepared, manager, pace);
    return withManaged(prepared, (await this.fieldManager.update(live, requested, manager, pace)).metadata.managedFields);
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

  /**
   * store.go DeleteCollection: deletes what a list with the request's options returns, and answers that list.
   * A list error (a bad continue token, a compacted resourceVersion) fails the request before anything is
   * deleted. Objects deleted meanwhile are skipped; any other failure stops it, as upstream's workers do.
   * The deletions settle without I/O on the in-memory backend: they share the turn's budget (turns.ts).
   */
  async deleteCollection(ctx: RequestContext, opts: DeleteOptions, dryRun: boolean, listOpts: ListOptions): Promise<ListResult> {
    const listed = await this.listForDeletion(ctx, listOpts);
    for (const e of listed.items) {
      const room = waitForTurn();
      if (room) await room;
      await this.deleteListed(e, opts, dryRun);
    }
    return listed;
  }

  /**
   * With a limit, one page (its continue token and remaining count included); without, every page of
   * deleteCollectionPageSize, later pages from the first one's continue token (so at its resourceVersion),
   * answered as the first page's list with every page's items (its continue token kept), as upstream does.
   * Every page is read before anything is deleted: upstream reads later pages from etcd at that revision,
   * while here they may come from the watch cache's window, which the deletions themselves would move
   * past it (a collection over twice the history answered 410 for a continue token the client never sent).
   */
  private async listForDeletion(ctx: RequestContext, listOpts: ListOptions): Promise<ListResult> {
    if (listOpts.limit > 0) return this.list(ctx, listOpts);
    const page: ListOptions = { ...listOpts, limit: DELETE_COLLECTION_PAGE_SIZE };
    const first = await this.list(ctx, page);
    const items = [...first.items];
    for (let token = first.continue; token;) {
      const next = await this.list(ctx, { ...page, continue: token, resourceVersion: '', resourceVersionMatch: '' });
      items.push(...next.items);
      token = next.continue;
    }
    return { ...first, items };
  }

  private async deleteListed(e: Entry, opts: DeleteOptions, dryRun: boolean): Promise<void> {
    try {
      await this.delete({ namespace: e.object.metadata.namespace }, e.object.metadata.name!, opts, dryRun);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
}

const isTooLarge = (e: unknown) => e instanceof ApiError && e.reason === 'RequestEntityTooLarge';

const withoutManagedFields = (obj: KubeObject): KubeObject => withManaged(obj, undefined);

function sameSet(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  const inB = new Set(b);
  return a.every((x) => inB.has(x));
}

