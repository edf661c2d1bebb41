// Benchmark runner: `npx tsx bench/run.ts [--quick] [--only http,watch,heap,startup,loopstall,peers]`.
// Every number is compared with a peer measured in the same run (the machine is small and noisy),
// so read the ratios, not the absolute values. Prints a table and writes bench/results.json.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDevCerts, ensureToken } from '../src/certs/devCerts.js';
import { BENCH_DIR } from './lib/common.js';
import { heapSuite } from './suites/heap.js';
import { httpSuite } from './suites/http.js';
import { loopStallSuite } from './suites/loopStall.js';
import { peersSuite } from './suites/peers.js';
import { startupSuite } from './suites/startup.js';
import type { Ctx, Row, SuiteResult } from './suites/types.js';
import { watchSuite } from './suites/watch.js';

const suites: Record<string, (ctx: Ctx) => Promise<SuiteResult>> = {
  http: httpSuite, watch: watchSuite, heap: heapSuite, startup: startupSuite, loopstall: loopStallSuite, peers: peersSuite,
};
// Only with --only: peers needs the real control plane (and ~6 min).
const optIn = new Set(['peers']);

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } } });
const selected = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(suites).filter((s) => !optIn.has(s));
for (const s of selected) if (!suites[s]) throw new Error(`unknown suite ${s}; one of ${Object.keys(suites).join(', ')}`);

const started = Date.now();
const loadavgAtStart = loadavg();
const certDir = await mkdtemp(join(tmpdir(), 'farm-bench-'));
await ensureDevCerts(certDir);
const token = await ensureToken(certDir);
const log = (msg: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);
const ctx: Ctx = { quick: values.quick, certDir, token, log };

const rows: Row[] = [];
const details: Record<string, unknown> = {};
const failures: string[] = [];
try {
  for (const name of selected) {
    log(`== ${name}`);
    try {
      const r = await suites[name](ctx);
      rows.push(...r.rows);
      details[name] = r.detail;
      for (const f of (r.detail.failures as string[] | undefined) ?? []) failures.push(`${name}: ${f}`);
    } catch (e) {
      failures.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
      log(`!! ${name} failed: ${e instanceof Error ? e.stack : String(e)}`);
    }
  }
} finally {
  await rm(certDir, { recursive: true, force: true });
}

const fmt = (x: number) => (!Number.isFinite(x) ? String(x) : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
const header = ['Benchmark', 'Metric', 'Ours', 'Peer', 'Ratio', 'Ratio means'];
const table = rows.map((r) => [r.bench, r.metric, `${fmt(r.ours)} ${r.unit}`, `${fmt(r.peer)} ${r.unit}`, fmt(r.ratio), r.reading]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((t) => t[i].length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
const machine = { cores: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version, platform: `${process.platform}/${process.arch}`, loadavgAtStart, loadavgAtEnd: loadavg() };
const elapsedS = (Date.now() - started) / 1000;

console.log();
console.log(line(header));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const t of table) console.log(line(t));
for (const r of rows) if (r.note) console.log(`  · ${r.bench} — ${r.metric}: ${r.note}`);
console.log(`\n${values.quick ? 'quick' : 'full'} run, ${elapsedS.toFixed(0)} s, ${machine.cores} × ${machine.model}, Node ${machine.node}, load average ${machine.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')} at start, ${machine.loadavgAtEnd.map((x) => x.toFixed(1)).join(' ')} at end`);
if (failures.length) console.log(`\nFAILURES:\n${failures.map((f) => `  - ${f}`).join('\n')}`);

// The same table as Markdown, for docs/benchmarks.md.
console.log('\n| Benchmark | Metric | Ours | Peer | Ratio |\n|---|---|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.bench} | ${r.metric} | ${fmt(r.ours)} ${r.unit} | ${fmt(r.peer)} ${r.unit} | ${fmt(r.ratio)} |`);

const out = {
  date: new Date().toISOString(),
  command: `npx tsx bench/run.ts${values.quick ? ' --quick' : ''}${values.only ? ` --only ${values.only}` : ''}`,
  mode: values.quick ? 'quick' : 'full', elapsedS, machine, rows, failures, details,
};
await writeFile(join(BENCH_DIR, 'results.json'), `${JSON.stringify(out, null, 2)}\n`);
console.log(`\nwrote bench/results.json`);
process.exitCode = failures.length ? 1 : 0;
