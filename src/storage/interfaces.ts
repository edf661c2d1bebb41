// The storage contract (k8s.io/apiserver pkg/storage/interfaces.go): what the registry needs from a
// backend. Keys are "<namespace>/<name>" (or "<name>"); resourceVersions are numbers that only grow.
import type { KubeObject } from '../apimachinery/types.js';

export interface Entry {
  readonly key: string;
  /** Never mutated after it is stored; its metadata.resourceVersion is `rv` (absent when rv is 0). */
  readonly object: KubeObject;
  /** JSON of `object`, made once per write so lists and watch events are built from ready bytes. */
  readonly json: string;
  readonly rv: number;
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  readonly type: ChangeType;
  readonly rv: number;
  /** For DELETED: the last state, stamped with the deletion's resourceVersion. */
  readonly entry: Entry;
  readonly prev?: Entry;
}

export type WatchItem =
  | { type: ChangeType; entry: Entry }
  /** rv: a number, or a resource's own opaque resourceVersion text (FarmPods' "<pod>.<llama>"). */
  | { type: 'INITIAL_END' | 'BOOKMARK'; rv: number | string };

/** storage.SelectionPredicate: what narrows a list or watch beyond the key prefix. */
export interface Predicate {
  /** undefined when nothing narrows the selection beyond the prefix. */
  matches?: (obj: KubeObject) => boolean;
  /** A single key the selection pins down (metadata.name=X within a namespace): read it, not the range. */
  onlyKey?: string;
}

export interface ListOptions {
  /** Key prefix such as "ns/" for a namespaced list; "" for all. */
  prefix: string;
  /** "" = most recent; "0" = any; otherwise a resourceVersion to be at least as new as (or exactly, with Exact). */
  resourceVersion: string;
  resourceVersionMatch: '' | 'Exact' | 'NotOlderThan' | string;
  /** A continue token from an earlier page (it carries its own resourceVersion). */
  continue: string;
  /** 0 = no limit. */
  limit: number;
  predicate: Predicate;
}

export interface ListResult {
  items: Entry[];
  resourceVersion: number;
  /** What the client is told instead of `resourceVersion`: a resource's own opaque text (FarmPods' "<pod>.<llama>"). */
  resourceVersionText?: string;
  continue?: string;
  /** Only when no predicate filters what remains (etcd can count it then). */
  remainingItemCount?: number;
}

export interface WatchOptions {
  prefix: string;
  /** Only changes after this RV; undefined = start now. */
  fromRV?: number;
  /** Emit the current matching objects as ADDED first (RV unset or "0", or sendInitialEvents). */
  initialState?: boolean;
  /** Follow the initial state with an INITIAL_END marker (sendInitialEvents). */
  initialEndMarker?: boolean;
  predicate: Predicate;
  /** Buffered live events before a slow watcher is dropped. */
  capacity: number;
}

/** One watch stream: a bounded queue that never blocks the writers feeding it. */
export interface Watcher {
  /** Next item, or undefined once closed and drained (an overflowed watcher drops what it buffered). */
  next(): Promise<WatchItem | undefined>;
  /** Items ready to read without waiting (lets a writer batch them into one write). */
  pending(): number;
  /** Queues a bookmark at the current resourceVersion, behind every change already queued. */
  requestBookmark(): void;
  close(): void;
  /** Resolves once it is closed (by either side, or dropped for falling behind). */
  closed(): Promise<void>;
  /** Why it ended: closed (by either side) or dropped for falling behind; undefined while open. */
  readonly closedReason: 'closed' | 'overflow' | undefined;
}

/** Preconditions of a delete or update (metav1.Preconditions). */
export interface Preconditions { uid?: string; resourceVersion?: string }

/** The reads every served resource offers, whether stored by us or mirrored from elsewhere. */
export interface Reader {
  /** The newest resourceVersion this reader has seen (a list's resourceVersion when nothing is asked). */
  readonly resourceVersion: number;
  /** Why reads cannot be served right now (e.g. a cache not yet synced), or undefined. */
  unavailable(): string | undefined;
  /** The object at `key` once this reader is at least at `resourceVersion` (GetOptions), or undefined. */
  get(key: string, resourceVersion?: string): Promise<Entry | undefined>;
  list(opts: ListOptions): Promise<ListResult>;
  watch(opts: WatchOptions): Promise<Watcher>;
  /**
   * Resolves once this reader has caught up with `resourceVersion` (a client's RV from another replica,
   * or the future); a TooLargeResourceVersion StorageError after the wait (the watch cache's 3 s).
   */
  waitUntilFresh(resourceVersion: string): Promise<void>;
}

/**
 * What a try-update decides (GuaranteedUpdate's tryUpdate). It must be pure: a backend runs it again on
 * the newer state when the object changed under it. `result` travels back with the committed attempt.
 */
export type TryUpdate<R> = (current: Entry | undefined) => Promise<{ object: KubeObject; result: R }>;

export interface UpdateOptions {
  /** An update that adds deletion metadata may grow an object past the size bound: it must be able to finish. */
  allowGrowthPastLimit?: boolean;
}

export interface Storage extends Reader {
  /** Stores a new object; KeyExists when the key is taken. */
  create(key: string, object: KubeObject): Promise<Entry>;
  /**
   * Reads the current state, runs `tryUpdate` on it and stores the result unless it equals what is
   * stored (then nothing is written: same resourceVersion, no event). Conflict after repeated races.
   */
  guaranteedUpdate<R>(key: string, tryUpdate: TryUpdate<R>, opts?: UpdateOptions): Promise<{ entry: Entry; created: boolean; result: R }>;
  /** Deletes `key` if the preconditions hold for its current state; the deleted state comes back. */
  delete(key: string, preconditions?: Preconditions): Promise<Entry>;
}

/** The in-process view of a cache: synchronous reads and change notifications (one resource embedding another's data). */
export interface CacheView {
  readonly resourceVersion: number;
  readonly size: number;
  readonly watcherCount: number;
  get(key: string): Entry | undefined;
  subscribe(listener: (c: Change) => void): () => void;
  /** Told after the whole content was replaced (a relist), which comes as no change. */
  onReset(listener: () => void): () => void;
}
