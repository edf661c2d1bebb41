import { buildResources } from '../src/resources/index.js';
import { preparedLlama } from './lib/llama.js';
const def = buildResources({ watchHistory: 10000, garbageCollection: false }).definitions[0];
const now = new Date();
const objs = [];
for (let i = 0; i < 100000; i++) objs.push(preparedLlama(def, `farm-${i % 10}`, `llama-${String(i).padStart(6, '0')}`, i, now));
const t0 = performance.now();
for (let i = 0; i < objs.length; i++) {
  await def.provider.create!(objs[i], { dryRun: false });
  if ((i + 1) % 20000 === 0) console.log(i + 1, ((performance.now() - t0) / (i + 1) * 1000).toFixed(1), 'us/create avg');
}
