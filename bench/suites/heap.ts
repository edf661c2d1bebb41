// Benchmark 4: heap bytes per stored llama, in a fresh process with --expose-gc. With --baseline,
// the same measurement runs in the baseline tree's bench/procs/heap.ts right after ours.
import { Child } from '../lib/common.js';
import type { Tree } from '../lib/trees.js';
import type { Ctx, Row, SuiteResult } from './types.js';

interface HeapResult { heapBytesPerLlama: number; jsonBytesPerLlama: number; createUsPerLlama: number; prepareUsPerLlama: number; heapUsedMB: number; createUsFirstTenth: number; createUsLastTenth: number }

async function measureHeap(tree: Tree, count: number): Promise<HeapResult> {
  const child = await Child.start('procs/heap.ts', [], { execArgv: ['--expose-gc'], tree });
  try {
    return await child.call('run', { count, watchHistory: 10_000, randomNames: false });
  } finally {
    await child.stop();
  }
}

export async function heapSuite(ctx: Ctx): Promise<SuiteResult> {
  const count = ctx.quick ? 20_000 : 100_000;
  ctx.log(`heap: ${count} llamas through MemoryStore.create`);
  const r = await measureHeap(ctx.ours, count);
  let b: HeapResult | undefined;
  if (ctx.baseline) {
    ctx.log(`heap: the same at ${ctx.baseline.label}`);
    b = await measureHeap(ctx.baseline, count);
  }
  const rows: Row[] = [{
    bench: `Heap per stored llama (${count / 1000}k llamas)`, metric: 'heapUsed delta / llama', unit: 'B',
    ours: r.heapBytesPerLlama, peer: r.jsonBytesPerLlama, ratio: r.heapBytesPerLlama / r.jsonBytesPerLlama,
    reading: 'heap/JSON text; how many times the raw JSON size is kept',
    note: `default --watch-history 10000; llamas in 10 namespaces`,
    ...(b && { baseline: { value: b.heapBytesPerLlama, ratio: r.heapBytesPerLlama / b.heapBytesPerLlama, better: 'lower' as const } }),
  }, {
    bench: `MemoryStore.create, ${count / 1000}k llamas`, metric: `µs/create, last ${count / 10000}k vs first ${count / 10000}k`, unit: 'µs',
    ours: r.createUsLastTenth, peer: r.createUsFirstTenth, ratio: r.createUsLastTenth / r.createUsFirstTenth,
    reading: 'full store/empty store; 1.0 = O(1) inserts, higher = inserts slow down as the store grows',
    note: 'store time only (object prepared beforehand); ObjectCache keeps keys in sorted blocks of <= 1,024',
    // Against the baseline: the time per create on the full store (the row's "ours").
    ...(b && { baseline: { value: b.createUsLastTenth, ratio: r.createUsLastTenth / b.createUsLastTenth, better: 'lower' as const } }),
  }];
  return { rows, detail: { count, ...r, ...(b && { baseline: b }) } };
}
