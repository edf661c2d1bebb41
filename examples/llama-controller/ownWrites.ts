// Which of its own writes the informer has not shown yet (client-go controllers call these
// "expectations"). Until the cache holds the resourceVersion a write returned, the cached llama is
// older than what the controller already knows, and acting on it would repeat the write (with a new
// lastTransitionTime: a second write, not a no-op). The watch event for that resourceVersion clears
// the wait; a wait is bounded, in case the event never comes (e.g. the informer relisted past it).
export class OwnWrites {
  private readonly awaited = new Map<string, { resourceVersion: string; since: number }>();

  constructor(private readonly maxWaitMs = 5000) {}

  /** A write returned this resourceVersion; currentInCache is what the cache holds right now. */
  wrote(key: string, resourceVersion: string | undefined, currentInCache: string | undefined): void {
    if (!resourceVersion || resourceVersion === currentInCache) this.awaited.delete(key);
    else this.awaited.set(key, { resourceVersion, since: Date.now() });
  }

  /** The informer delivered this version of the key. */
  observed(key: string, resourceVersion: string | undefined): void {
    if (this.awaited.get(key)?.resourceVersion === resourceVersion) this.awaited.delete(key);
  }

  forget(key: string): void {
    this.awaited.delete(key);
  }

  /** How long to wait before acting on the cached version of the key (0: act now). */
  waitMs(key: string, cachedResourceVersion: string | undefined): number {
    const a = this.awaited.get(key);
    if (!a) return 0;
    const left = a.since + this.maxWaitMs - Date.now();
    if (a.resourceVersion === cachedResourceVersion || left <= 0) {
      this.awaited.delete(key);
      return 0;
    }
    return left;
  }
}
