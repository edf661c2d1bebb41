import { Child } from './lib/common.js';
for (const randomNames of [false, true]) {
const h = await Child.start('procs/heap.ts', [], { execArgv: ['--expose-gc'] });
console.log(await h.call('run', { count: 100_000, watchHistory: 10_000, randomNames }));
await h.stop();
}
