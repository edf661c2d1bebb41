// One reconcile of one llama, from the informer's cache:
//   live, without the finalizer  → apply it (event FinalizerAdded);
//   live                         → apply the Ready condition and observedGeneration on /status when
//                                  they differ from what the llama shows (event Reconciled);
//   deleting, with the finalizer → event Finalizing, clean up, apply without the finalizer;
//   gone, or deleting without it → nothing.
// Errors propagate: the worker requeues the key with backoff.
import type { ObjectCache } from '@kubernetes/client-node';
import type { LlamaApi } from './api.js';
import type { EventRecorder } from './events.js';
import { hasFinalizer, splitKey, FINALIZER, type Llama } from './llama.js';
import type { Logger } from './log.js';
import type { OwnWrites } from './ownWrites.js';
import { desiredStatus, statusUpToDate } from './status.js';

export interface ReconcileResult {
  /** Look at the key again after this long (e.g. the cache is behind the controller's own write). */
  requeueAfterMs?: number;
}

export interface ReconcilerDeps {
  cache: ObjectCache<Llama>;
  api: LlamaApi;
  events: EventRecorder;
  ownWrites: OwnWrites;
  log: Logger;
}

export function reconciler(d: ReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const cachedRV = (l: Llama) => d.cache.get(l.metadata.name, l.metadata.namespace)?.metadata.resourceVersion;
  const wrote = (key: string, l: Llama) => d.ownWrites.wrote(key, l.metadata.resourceVersion, cachedRV(l));

  async function finalize(key: string, l: Llama, log: Logger): Promise<ReconcileResult> {
    // Removing the finalizer cannot be undone: decide on the server's copy, not the cache's.
    const fresh = await d.api.get(l.metadata.namespace, l.metadata.name);
    if (!fresh || fresh.metadata.uid !== l.metadata.uid || !fresh.metadata.deletionTimestamp || !hasFinalizer(fresh)) {
      log.info('finalize: nothing to do on the server copy', { found: !!fresh });
      return {};
    }
    d.events.record(fresh, 'Normal', 'Finalizing', `Llama is being deleted: ${FINALIZER} cleans up and lets it go`);
    // Cleanup: this example manages nothing outside the llama, so there is nothing to release.
    const after = await d.api.applyFinalizer(fresh, false);
    wrote(key, after);
    log.info('finalizer removed', { remainingFinalizers: after.metadata.finalizers ?? [] });
    return {};
  }

  return async function reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const log = d.log.with({ llama: key });
    let l = d.cache.get(name, namespace);
    if (!l) {
      d.ownWrites.forget(key);
      return {};
    }
    const waitMs = d.ownWrites.waitMs(key, l.metadata.resourceVersion);
    if (waitMs > 0) {
      log.debug('cache is behind our last write; waiting for its watch event', { cached: l.metadata.resourceVersion, waitMs });
      return { requeueAfterMs: waitMs };
    }

    if (l.metadata.deletionTimestamp) return hasFinalizer(l) ? finalize(key, l, log) : {};

    if (!hasFinalizer(l)) {
      l = await d.api.applyFinalizer(l, true);
      wrote(key, l);
      log.info('finalizer added', { finalizers: l.metadata.finalizers ?? [], resourceVersion: l.metadata.resourceVersion });
      d.events.record(l, 'Normal', 'FinalizerAdded', `Added finalizer ${FINALIZER}`);
    }

    const want = desiredStatus(l, new Date());
    if (statusUpToDate(l, want)) return {};
    const before = l.status?.observedGeneration;
    l = await d.api.applyStatus(l, want);
    wrote(key, l);
    log.info('status applied', { generation: l.metadata.generation, observedGenerationBefore: before, resourceVersion: l.metadata.resourceVersion });
    d.events.record(l, 'Normal', 'Reconciled', `Ready: observed generation ${want.observedGeneration}`);
    return {};
  };
}
