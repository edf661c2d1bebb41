// DryRunnableStorage (k8s.io/apiserver pkg/registry/generic/registry/dryrun.go): with dryRun=All a
// write is computed and checked exactly as it would be stored, then nothing is written or announced.
import type { KubeObject } from '../../apimachinery/types.js';
import { storageErrors } from '../../storage/errors.js';
import type { Entry, Preconditions, Storage, TryUpdate, UpdateOptions } from '../../storage/interfaces.js';
import { checkPreconditions, checkSize, sameObject, stamped } from '../../storage/objects.js';
import { inSpan } from '../../apimachinery/tracing.js';

/** The span of one storage write (etcd3/store.go's "Create etcd3" …): every write of a resource passes here. */
const writeSpan = <T>(verb: string, key: string, resource: string, dryRun: boolean, fn: () => Promise<T>) =>
  inSpan(`storage.${verb}`, () => ({ key, resource, ...(dryRun && { dryRun }) }), fn);

export class DryRunnableStorage {
  /** `resource`: the group-resource ("llamas.farm.example.com") its spans name. */
  constructor(readonly storage: Storage, private readonly resource = '') {}

  /** A dry-run create has no resourceVersion yet. */
  async create(key: string, object: KubeObject, dryRun: boolean): Promise<Entry> {
    return writeSpan('Create', key, this.resource, dryRun, () => this.createUntraced(key, object, dryRun));
  }

  private async createUntraced(key: string, object: KubeObject, dryRun: boolean): Promise<Entry> {
    if (!dryRun) return this.storage.create(key, object);
    if (await this.storage.get(key)) throw storageErrors.exists(key);
    const entry = stamped(key, object, 0);
    checkSize(entry, undefined);
    return entry;
  }

  /** A dry-run update keeps the current resourceVersion. */
  async guaranteedUpdate<R>(key: string, tryUpdate: TryUpdate<R>, dryRun: boolean, opts: UpdateOptions = {}) {
    return writeSpan('GuaranteedUpdate', key, this.resource, dryRun, () => this.guaranteedUpdateUntraced(key, tryUpdate, dryRun, opts));
  }

  private async guaranteedUpdateUntraced<R>(key: string, tryUpdate: TryUpdate<R>, dryRun: boolean, opts: UpdateOptions) {
    if (!dryRun) return this.storage.guaranteedUpdate(key, tryUpdate, opts);
    const current = await this.storage.get(key);
    const { object, result } = await tryUpdate(current);
    if (!current) return { entry: stamped(key, object, 0), created: true, result };
    if (sameObject(object, current)) return { entry: current, created: false, result };
    const entry = stamped(key, object, current.rv);
    checkSize(entry, current, opts.allowGrowthPastLimit);
    return { entry, created: false, result };
  }

  /** A dry-run delete answers with the object as it is. */
  async delete(key: string, preconditions: Preconditions, dryRun: boolean): Promise<Entry> {
    return writeSpan('Delete', key, this.resource, dryRun, () => this.deleteUntraced(key, preconditions, dryRun));
  }

  private async deleteUntraced(key: string, preconditions: Preconditions, dryRun: boolean): Promise<Entry> {
    if (!dryRun) return this.storage.delete(key, preconditions);
    const current = await this.storage.get(key);
    if (!current) throw storageErrors.notFound(key);
    checkPreconditions(key, current, preconditions);
    return current;
  }
}
