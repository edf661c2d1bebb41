// Walks over a whole object are generators that offer to pause every CHUNK items of a big map, list or
// set: run at once for ordinary objects, or paced (others run in between) for a write of a big one.
// A sort of a big node is a merge of sorted chunks, so it can pause too.
import type { Pacer } from '../pacer.js';

export type Walk<T> = Generator<void, T, void>;

/** A big loop yields once per this many items. */
const CHUNK = 2048;

/** Whether the n-th item of a loop is a place to pause (n counts from 1). */
export const pauseAt = (n: number): boolean => n % CHUNK === 0;

export function runNow<T>(w: Walk<T>): T {
  for (;;) {
    const r = w.next();
    if (r.done) return r.value;
  }
}

export async function runPaced<T>(w: Walk<T>, pace: Pacer): Promise<T> {
  for (;;) {
    const r = w.next();
    if (r.done) return r.value;
    await pace.breathe();
  }
}

/** A stable sort of `items` (in place) that pauses between chunks and merge steps. */
export function* sortWalk<T>(items: T[], cmp: (a: T, b: T) => number): Walk<T[]> {
  if (items.length <= CHUNK) return items.sort(cmp);
  let runs: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) {
    runs.push(items.slice(i, i + CHUNK).sort(cmp));
    yield;
  }
  while (runs.length > 1) {
    const next: T[][] = [];
    for (let i = 0; i < runs.length; i += 2) next.push(i + 1 < runs.length ? yield* mergeRuns(runs[i], runs[i + 1], cmp) : runs[i]);
    runs = next;
  }
  for (let i = 0; i < items.length; i++) items[i] = runs[0][i];
  return items;
}

function* mergeRuns<T>(a: T[], b: T[], cmp: (x: T, y: T) => number): Walk<T[]> {
  const out: T[] = new Array<T>(a.length + b.length);
  let i = 0;
  let j = 0;
  for (let k = 0; k < out.length; k++) {
    out[k] = j >= b.length || (i < a.length && cmp(a[i], b[j]) <= 0) ? a[i++] : b[j++];
    if (pauseAt(k + 1)) yield;
  }
  return out;
}
