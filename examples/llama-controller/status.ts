// The status this controller wants a live llama to have, and whether the llama has it already.
// Pure functions: the reconciler decides to write only when statusUpToDate is false.
import type { Condition, Llama, LlamaStatus } from './llama.js';

export const READY = 'Ready';
export const READY_REASON = 'Reconciled';
export const READY_MESSAGE = 'The llama is at home: llama-controller has reconciled this generation';

/** metav1.Time's wire form: RFC 3339 in seconds. */
export function metaTime(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

function readyOf(l: Llama): Condition | undefined {
  return l.status?.conditions?.find((c) => c.type === READY);
}

/**
 * The fields this controller applies: the Ready condition and status.observedGeneration. The
 * condition keeps its lastTransitionTime while its status does not change (metav1's SetStatusCondition).
 */
export function desiredStatus(l: Llama, now: Date): LlamaStatus & { conditions: [Condition]; observedGeneration: number } {
  const generation = l.metadata.generation ?? 0;
  const current = readyOf(l);
  const status: Condition['status'] = 'True';
  return {
    conditions: [{
      type: READY, status, reason: READY_REASON, message: READY_MESSAGE, observedGeneration: generation,
      lastTransitionTime: current?.status === status && current.lastTransitionTime ? current.lastTransitionTime : metaTime(now),
    }],
    observedGeneration: generation,
  };
}

/** True when the llama already shows what desiredStatus would apply (so nothing is written). */
export function statusUpToDate(l: Llama, want: LlamaStatus): boolean {
  const cur = readyOf(l);
  const w = want.conditions?.[0];
  return !!cur && !!w && cur.status === w.status && cur.reason === w.reason && cur.message === w.message &&
    cur.observedGeneration === w.observedGeneration && cur.lastTransitionTime === w.lastTransitionTime &&
    l.status?.observedGeneration === want.observedGeneration;
}
