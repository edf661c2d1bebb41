// The status subresource's storage (apiextensions-apiserver's StatusREST): the resource's own
// generic store with the status strategy, serving get, update and patch of `/status`. Updates there
// change `.status` only; the store knows which subresource it writes through and what it resets, the
// seam the field manager records managedFields entries with (subresource "status").
import { errors } from '../../apimachinery/status.js';
import type { Storage } from '../../storage/interfaces.js';
import { groupResource, hasStatusSubresource, type ResourceDefinition, type ResourceDescriptor } from '../resource.js';
import type { RequestContext, StatusStorage, UpdatedObjectInfo, UpdateOptions } from '../rest.js';
import { Store } from './store.js';
import type { Strategy } from './strategy.js';

export class StatusStore implements StatusStorage {
  readonly subresource = 'status' as const;
  private readonly store: Store;

  constructor(private readonly def: ResourceDescriptor, storage: Storage, strategy: Strategy) {
    // Upstream copies the main store and swaps in the status strategy; so do we.
    this.store = new Store(def, storage, { ...strategy, subresource: 'status' });
  }

  /** Records /status writes under subresource "status"; server-side apply on /status merges through it. */
  get fieldManager() { return this.store.fieldManager; }

  unavailable(): string | undefined { return this.store.unavailable(); }

  get(ctx: RequestContext, name: string, resourceVersion: string) {
    return this.store.get(ctx, name, resourceVersion);
  }

  update(ctx: RequestContext, name: string, objInfo: UpdatedObjectInfo, opts: UpdateOptions) {
    return this.store.update(ctx, name, objInfo, opts);
  }

  // Never routed (upstream registers only get, put and patch for a subresource); here for RestStorage.
  async list(): Promise<never> { throw errors.methodNotAllowed('list', groupResource(this.def)); }
  async watch(): Promise<never> { throw errors.methodNotAllowed('watch', groupResource(this.def)); }
}

/** The storage of each subresource a stored resource's descriptor declares (none: undefined). */
export function subresourceStores(def: ResourceDescriptor, storage: Storage, strategy: Strategy): ResourceDefinition['subresourceRest'] {
  return hasStatusSubresource(def) ? { status: new StatusStore(def, storage, strategy) } : undefined;
}

