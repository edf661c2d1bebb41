// --workers on this machine: GET one llama (consistent read, token) and LIST 1,000 against our server on
// the etcd3 backend with 1 and then 2 worker processes, same etcd, same load generator, interleaved
// rounds. `npx tsx bench/workers.ts [--rounds n]`. Prints req/s and ratios; a 2-core machine shares its
// cores with the load generator and etcd, so read the ratio as "what a second core buys here".
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { etcdReplicas } from '../test/helpers/replicas.js';
import { Child, median } from './lib/common.js';
import type { RunArgs, RunResult } from './procs/loadgen.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '4' } } });
const rounds = Number(values.rounds);
const env = await etcdReplicas('bench-workers', ['--etcd-compaction-interval=0', '--log-level', 'warn']);
const { set } = env;
const servers = { '1 worker': await set.add('one', ['--workers', '1']), '2 workers': await set.add('two', ['--workers', '2']) };
const base = '/apis/farm.example.com/v1alpha/namespaces/bench/llamas';
for (let i = 0; i < 1000; i++) {
  const r = await servers['1 worker'].request('POST', base, { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: `llama-${String(i).padStart(4, '0')}` }, spec: { weight: 100, height: 1.8 } });
  if (r.status !== 201) throw new Error(`seed: ${r.status} ${r.body}`);
}
const lg = await Child.start('procs/loadgen.ts');
const rows: string[] = [];
try {
  for (const [row, path] of [['GET one', `${base}/llama-0000`], ['LIST 1,000', base]] as const) {
    const rps: Record<string, number[]> = { '1 worker': [], '2 workers': [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['1 worker', '2 workers'] as const : ['2 workers', '1 worker'] as const;
      for (const name of order) {
        const args = { port: servers[name].port, path, headers: { authorization: `Bearer ${set.token}` }, caFile: join(set.certDir, 'ca.crt'),
          connections: 16, warmupMs: 500, durationMs: 3000, sameSize: false } satisfies RunArgs;
        const r = await lg.call<RunResult>('run', args);
        if (r.errors) throw new Error(`${row} on ${name}: ${r.errors} errors, first: ${r.firstError}`);
        rps[name].push(r.rps);
      }
    }
    const [one, two] = [median(rps['1 worker']), median(rps['2 workers'])];
    rows.push(`| ${row} | ${one.toFixed(0)} req/s | ${two.toFixed(0)} req/s | ${(two / one).toFixed(2)} |`);
  }
} finally {
  await lg.stop();
  await env.close();
}
process.stdout.write(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}, ${rounds} rounds, medians\n| Benchmark | --workers 1 | --workers 2 | 2 ÷ 1 |\n|---|--:|--:|--:|\n${rows.join('\n')}\n`);
