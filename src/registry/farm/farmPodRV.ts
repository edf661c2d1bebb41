// FarmPod resourceVersions: "<pod>.<llama>", the position in the two streams a FarmPod is made of —
// the core Pods' resourceVersion (kube's) and the Llamas' (ours). Both are global (the same on every
// replica, and across our restarts with etcd3), and a FarmPod state at a position is a pure function
// of the Pods and Llamas as of it, so a position means the same thing wherever it is resolved.
// Clients treat it as opaque; docs/farmpods.md describes the scheme.
import { errors } from '../../apimachinery/status.js';

export interface Position { readonly pod: number; readonly llama: number }

/** A FarmPod resourceVersion a request carries: none, "0" (any), or a position. */
export type RequestedRV = { kind: 'none' } | { kind: 'any' } | { kind: 'at'; pos: Position; text: string };

const UINT64_MAX = 18446744073709551615n;

export function formatPosition(p: Position): string {
  return `${p.pod}.${p.llama}`;
}

/**
 * "" → none; "0" → any; "<pod>.<llama>" → that position. A plain integer N is a FarmPod RV of the
 * earlier scheme (the Pod's alone): position N.0, which is too old for any watch (410, clients relist)
 * and a lower bound for NotOlderThan reads. Anything else is a 400, as ParseResourceVersion answers.
 */
export function parseFarmPodRV(rv: string): RequestedRV {
  if (rv === '') return { kind: 'none' };
  const m = /^(\d+)(?:\.(\d+))?$/.exec(rv);
  if (!m || BigInt(m[1]) > UINT64_MAX || (m[2] !== undefined && BigInt(m[2]) > UINT64_MAX)) {
    throw errors.badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  }
  const pos = { pod: Number(m[1]), llama: m[2] === undefined ? 0 : Number(m[2]) };
  if (m[2] === undefined && pos.pod === 0) return { kind: 'any' };
  return { kind: 'at', pos, text: rv };
}

/** a ≤ b in both streams: everything a has seen, b has seen. */
export function notAfter(a: Position, b: Position): boolean {
  return a.pod <= b.pod && a.llama <= b.llama;
}
