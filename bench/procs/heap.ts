// Child process (node --expose-gc): heap bytes per stored Llama. Creates `count` llamas through
// MemoryStore.create (prepared as the create handler prepares them), with the server's default
// watch history, and compares the heap growth with the size of the llamas' JSON text.
import { buildResources } from '../../src/registry/farm/index.js';
import { objectKey } from '../../src/storage/objects.js';
import { nowMs, serveIpc } from '../lib/common.js';
import { preparedLlama } from '../lib/llama.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function settledHeap(): number {
  for (let i = 0; i < 4; i++) gc!();
  return process.memoryUsage().heapUsed;
}

serveIpc({
  async run({ count, watchHistory, randomNames }: { count: number; watchHistory: number; randomNames: boolean }) {
    const built = buildResources({ watchHistory, garbageCollection: false });
    const def = built.definitions[0];
    const store = built.stores.get('llamas')!;
    const now = new Date();
    // Warm up code paths (zod, validation) so compiled code does not count as per-llama memory.
    for (let i = 0; i < 200; i++) preparedLlama(def, 'warmup', `w-${i}`, i, now);
    const names = Array.from({ length: count }, (_, i) => `llama-${String(i).padStart(6, '0')}`);
    if (randomNames) {
      for (let i = names.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1)); [names[i], names[j]] = [names[j], names[i]]; }
    }
    const before = settledHeap();
    const t0 = nowMs();
    let prepareMs = 0;
    // Store time of the first and the last tenth of the creates: a sorted-array insert is O(n).
    const tenth = Math.floor(count / 10);
    let firstTenthMs = 0, lastTenthMs = 0;
    for (let i = 0; i < count; i++) {
      const p0 = nowMs();
      const obj = preparedLlama(def, `farm-${i % 10}`, names[i], i, now);
      const p1 = nowMs();
      prepareMs += p1 - p0;
      await store.create(objectKey(obj.metadata.namespace, obj.metadata.name!), obj);
      const d = nowMs() - p1;
      if (i < tenth) firstTenthMs += d;
      else if (i >= count - tenth) lastTenthMs += d;
    }
    const totalMs = nowMs() - t0;
    const after = settledHeap();
    let jsonBytes = 0;
    const all = await store.list({ prefix: '', resourceVersion: '', resourceVersionMatch: '', continue: '', limit: 0, predicate: {} });
    for (const e of all.items) jsonBytes += Buffer.byteLength(e.json);
    const stored = store.view.size;
    if (stored !== count) throw new Error(`stored ${stored} != ${count}`);
    return {
      count, watchHistory, randomNames,
      heapBytesPerLlama: (after - before) / count,
      jsonBytesPerLlama: jsonBytes / count,
      createUsPerLlama: ((totalMs - prepareMs) * 1000) / count,
      prepareUsPerLlama: (prepareMs * 1000) / count,
      createUsFirstTenth: (firstTenthMs * 1000) / tenth,
      createUsLastTenth: (lastTenthMs * 1000) / tenth,
      heapUsedMB: after / 2 ** 20,
    };
  },
});
