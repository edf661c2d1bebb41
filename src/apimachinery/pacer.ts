// Long writes (3 MiB bodies, objects with 200k finalizers) take hundreds of ms in stages: a Pacer
// lets other requests (and /livez) run between stages once a stage took long, so the event loop is
// held for one stage at a time, not for the whole write. Small writes never yield.

/** A stage shorter than this does not yield (a setImmediate costs more than it saves). */
const SLICE_MS = 10;

export class Pacer {
  private since = performance.now();

  /** `sliceMs`: how long a stage may hold the event loop (work no request waits for can take less). */
  constructor(private readonly sliceMs = SLICE_MS) {}

  async breathe(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}
