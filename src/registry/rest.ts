// One small interface per verb (k8s.io/apiserver pkg/registry/rest/rest.go): a resource implements
// the ones it serves, and the verbs it advertises and the routes it gets derive from which it has.
import type { DeleteOptions, ListOptions, WriteOptions } from '../apimachinery/options.js';
import type { FieldManager } from '../apimachinery/managedfields/fieldManager.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { Entry, ListResult, Watcher as StorageWatcher } from '../storage/interfaces.js';

/** What a request tells the registry besides its arguments (kube's request context). */
export interface RequestContext {
  /** undefined = all namespaces (or a cluster-scoped resource). */
  namespace?: string;
}

export interface Getter {
  /** GetOptions.resourceVersion: "" = most recent; anything else waits until this server has reached it. */
  get(ctx: RequestContext, name: string, resourceVersion: string): Promise<Entry>;
}

export interface Lister {
  list(ctx: RequestContext, opts: ListOptions): Promise<ListResult>;
}

export interface Watcher {
  /** An RV older than the history kept is a 410 ApiError (the handler sends it as an ERROR event). */
  watch(ctx: RequestContext, opts: ListOptions, capacity: number): Promise<StorageWatcher>;
}

/** The new object's decoding findings (duplicate and unknown fields), acted on per fieldValidation. */
export interface Decoded {
  object: KubeObject;
  findings: readonly string[];
  /** Its managedFields are already what the write records (a server-side apply computed them). */
  managed?: boolean;
}

export interface WriteResult { entry: Entry; warnings: string[] }

export interface Creater {
  create(ctx: RequestContext, obj: Decoded, opts: WriteOptions): Promise<WriteResult>;
}

/**
 * rest.UpdatedObjectInfo: the object an update wants, computed from the current one. May run more than
 * once (a guaranteed update re-runs it on a newer state); throws ApiError to refuse.
 */
export type UpdatedObjectInfo = (current: KubeObject) => Promise<Decoded>;

export interface UpdateOptions extends WriteOptions {
  /** A patch: strict-validation findings are a 422 on the patch, and no resourceVersion is required. */
  patch: boolean;
  /** Given, a missing object is created from what it returns (server-side apply's forceAllowCreate). */
  createInfo?: () => Promise<Decoded>;
}

export interface Updater {
  /** Records managed fields on writes; server-side apply merges through it. */
  readonly fieldManager?: FieldManager;
  update(ctx: RequestContext, name: string, objInfo: UpdatedObjectInfo, opts: UpdateOptions): Promise<WriteResult & { created: boolean }>;
}

export interface GracefulDeleter {
  /** `deleted` is false when finalizers keep the object (now marked with a deletionTimestamp). */
  delete(ctx: RequestContext, name: string, opts: DeleteOptions, dryRun: boolean): Promise<{ entry: Entry; deleted: boolean }>;
}

export interface CollectionDeleter {
  /** Answers the list it deleted from: the objects as listed, the list's resourceVersion and continue token. */
  deleteCollection(ctx: RequestContext, opts: DeleteOptions, dryRun: boolean, listOpts: ListOptions): Promise<ListResult>;
}

/** Every served resource reads; writes are optional. */
export interface Readable extends Getter, Lister, Watcher {
  /** Why reads cannot be served right now (e.g. a cache not yet synced), or undefined. */
  unavailable(): string | undefined;
}

export type RestStorage = Readable & Partial<Creater & Updater & GracefulDeleter & CollectionDeleter>;

/**
 * A status subresource's storage (upstream's StatusREST: Get and Update only). It is also a RestStorage
 * so the verb handlers serve it as they serve the main resource; list and watch are never routed to it.
 */
export type StatusStorage = RestStorage & Getter & Updater & {
  /** The subresource its writes go through (managedFields entries carry it). */
  readonly subresource: 'status';
};

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** The verbs a resource's storage implements, as discovery lists them (sorted). */
export function restVerbs(rest: RestStorage): Verb[] {
  const verbs: Verb[] = ['get', 'list', 'watch'];
  if (rest.create) verbs.push('create');
  if (rest.update) verbs.push('update', 'patch');
  if (rest.delete) verbs.push('delete');
  if (rest.deleteCollection) verbs.push('deletecollection');
  return verbs.sort();
}
