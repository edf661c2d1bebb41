// Benchmark runner: `npx tsx bench/run.ts [--quick] [--only http,watch,heap,startup,loopstall,peers]
// [--baseline <git-rev>] [--current <git-rev>] [--rounds <n>]`.
// Every number is compared with a peer measured in the same run (the machine is small and noisy),
// so read the ratios, not the absolute values. Prints a table and writes bench/results.json.
// --baseline: the suites that start our server (http, watch, heap, startup, loopstall) also measure
// that commit, checked out into a temporary git worktree, interleaved with ours; a second table
// gives ours now vs ours then, oriented so that > 1 is better, and flags rows below 0.9.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDevCerts, ensureToken } from '../src/certs/devCerts.js';
import { BENCH_DIR } from './lib/common.js';
import { addWorktree, removeWorktrees, WORKING_TREE, type Tree } from './lib/trees.js';
import { heapSuite } from './suites/heap.js';
import { httpSuite } from './suites/http.js';
import { loopStallSuite } from './suites/loopStall.js';
import { managedFieldsSuite } from './suites/managedFields.js';
import { peersSuite } from './suites/peers.js';
import { startupSuite } from './suites/startup.js';
import type { Ctx, Row, SuiteResult } from './suites/types.js';
import { watchSuite } from './suites/watch.js';

/** Issue 9's bar: no benchmark worse than 0.9× its value at the baseline. */
const BASELINE_THRESHOLD = 0.9;

const suites: Record<string, (ctx: Ctx) => Promise<SuiteResult>> = {
  http: httpSuite, watch: watchSuite, heap: heapSuite, startup: startupSuite, loopstall: loopStallSuite, peers: peersSuite,
  managedfields: managedFieldsSuite,
};
// Only with --only: peers needs the real control plane (and ~6 min).
const optIn = new Set(['peers']);

const { values } = parseArgs({ options: {
  quick: { type: 'boolean', default: false }, only: { type: 'string' },
  /** Also measure this commit (ours then), interleaved with ours now. */
  baseline: { type: 'string' },
  /** Measure this commit as "ours" instead of the working tree (e.g. HEAD vs HEAD~1, or HEAD vs HEAD for the noise floor). */
  current: { type: 'string' },
  /** Rounds per http comparison (default 2 quick, 5 full). */
  rounds: { type: 'string' },
} });
const rounds = values.rounds === undefined ? undefined : Number(values.rounds);
if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1 && rounds <= 50)) throw new Error(`--rounds ${values.rounds}: want an integer 1..50`);
const selected = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(suites).filter((s) => !optIn.has(s));
for (const s of selected) if (!suites[s]) throw new Error(`unknown suite ${s}; one of ${Object.keys(suites).join(', ')}`);

const started = Date.now();
const loadavgAtStart = loadavg();
const certDir = await mkdtemp(join(tmpdir(), 'farm-bench-'));
await ensureDevCerts(certDir);
const token = await ensureToken(certDir);
const log = (msg: string) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);
let ours: Tree = WORKING_TREE;
let baseline: Tree | undefined;
const worktreeProblems: string[] = [];
const failures: string[] = [];
try {
  if (values.current) ours = await addWorktree(values.current);
  if (values.baseline) baseline = await addWorktree(values.baseline);
} catch (e) {
  for (const p of removeWorktrees()) log(`!! ${p}`);
  await rm(certDir, { recursive: true, force: true });
  throw e;
}
if (ours !== WORKING_TREE && selected.includes('peers')) log('note: the peers suite measures the working tree, not --current');
if (baseline) log(`baseline: ${baseline.label} = ${baseline.sha} in ${baseline.root}; ours: ${ours.sha ?? 'the working tree'}`);
const ctx: Ctx = { quick: values.quick, certDir, token, log, ours, ...(baseline && { baseline }), ...(rounds && { rounds }) };

const rows: Row[] = [];
const details: Record<string, unknown> = {};
/** This run's rows per suite, for results.json's `stored`. */
const suiteRows: Record<string, Row[]> = {};
try {
  for (const name of selected) {
    log(`== ${name}`);
    try {
      const r = await suites[name](ctx);
      rows.push(...r.rows);
      suiteRows[name] = r.rows;
      details[name] = r.detail;
      for (const f of (r.detail.failures as string[] | undefined) ?? []) failures.push(`${name}: ${f}`);
    } catch (e) {
      failures.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
      log(`!! ${name} failed: ${e instanceof Error ? e.stack : String(e)}`);
    }
  }
} finally {
  await rm(certDir, { recursive: true, force: true });
  worktreeProblems.push(...removeWorktrees());
  for (const p of worktreeProblems) log(`!! ${p}`);
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

const worse = baseline ? printBaselineTable(baseline) : [];

const out = {
  date: new Date().toISOString(),
  command: `npx tsx bench/run.ts${values.quick ? ' --quick' : ''}${values.only ? ` --only ${values.only}` : ''}${values.rounds ? ` --rounds ${values.rounds}` : ''}${values.current ? ` --current ${values.current}` : ''}${values.baseline ? ` --baseline ${values.baseline}` : ''}`,
  mode: values.quick ? 'quick' : 'full', elapsedS, machine,
  ...(values.current && { current: { rev: ours.label, sha: ours.sha } }),
  ...(baseline && { baseline: { rev: baseline.label, sha: baseline.sha, threshold: BASELINE_THRESHOLD, worse } }),
  rows, failures, details,
};
await writeFile(join(BENCH_DIR, 'results.json'), `${JSON.stringify({ ...out, stored: await storedResults(out) }, null, 2)}\n`);
console.log(`\nwrote bench/results.json`);
process.exitCode = failures.length ? 1 : 0;

/**
 * `stored` in results.json: every suite's latest run (its rows, detail and that run's header), so that
 * `--only x` replaces x's results and keeps the others'. A file from before `stored` gives its suite
 * when it ran exactly one.
 */
async function storedResults(run: { date: string; command: string; mode: string }): Promise<Record<string, unknown>> {
  type Stored = { date: string; command: string; mode: string; machine: unknown; rows: Row[]; detail: unknown };
  let old: { date: string; command: string; mode: string; machine: unknown; rows: Row[]; details: Record<string, unknown>; stored?: Record<string, Stored> } | undefined;
  try { old = JSON.parse(await readFile(join(BENCH_DIR, 'results.json'), 'utf8')); } catch { old = undefined; }
  const stored: Record<string, Stored> = { ...old?.stored };
  const oldSuites = Object.keys(old?.details ?? {});
  if (old && !old.stored && oldSuites.length === 1) stored[oldSuites[0]] = { date: old.date, command: old.command, mode: old.mode, machine: old.machine, rows: old.rows, detail: old.details[oldSuites[0]] };
  for (const [name, suiteRowsOf] of Object.entries(suiteRows)) stored[name] = { date: run.date, command: run.command, mode: run.mode, machine, rows: suiteRowsOf, detail: details[name] };
  return stored;
}

/** Ours now vs ours at the baseline, > 1 = better; rows under this are flagged. */
function printBaselineTable(base: Tree): string[] {
  // Both labels can name the same revision (--current HEAD --baseline HEAD, the noise floor).
  const nowLabel = values.current ? `Ours at ${ours.label} (current)` : 'Ours now';
  const thenLabel = `Ours at ${base.label}${values.current ? ' (baseline)' : ''}`;
  const vs = (r: Row) => (r.baseline!.better === 'higher' ? r.baseline!.ratio : 1 / r.baseline!.ratio);
  const withBase = rows.filter((r) => r.baseline);
  const flag = (r: Row) => (vs(r) < BASELINE_THRESHOLD ? `WORSE (< ${BASELINE_THRESHOLD})` : '');
  const h = ['Benchmark', 'Metric', nowLabel, thenLabel, 'Now vs then (>1 better)', ''];
  const t = withBase.map((r) => [r.bench, r.metric, `${fmt(r.ours)} ${r.unit}`, `${fmt(r.baseline!.value)} ${r.unit}`, fmt(vs(r)), flag(r)]);
  const w = h.map((x, i) => Math.max(x.length, ...t.map((c) => c[i].length)));
  const ln = (cells: string[]) => cells.map((c, i) => c.padEnd(w[i])).join('  ').trimEnd();
  console.log(`\nOurs vs ours at ${base.label} (${base.sha!.slice(0, 10)}), same run, rounds interleaved; "Now vs then" is oriented so that > 1 is better`);
  console.log('(req/s: now/then; times, CPU, bytes: then/now), the median of per-round ratios where the suite has rounds.\n');
  console.log(ln(h));
  console.log(ln(w.map((x) => '-'.repeat(x))));
  for (const c of t) console.log(ln(c));
  const worse = withBase.filter((r) => vs(r) < BASELINE_THRESHOLD).map((r) => `${r.bench} — ${r.metric}: ${fmt(vs(r))}`);
  const without = rows.filter((r) => !r.baseline).length;
  if (without) console.log(`  (${without} row(s) have no baseline: suites that do not start our server, or rows the baseline could not measure)`);
  console.log(worse.length ? `\nBELOW ${BASELINE_THRESHOLD}× ${base.label}:\n${worse.map((x) => `  - ${x}`).join('\n')}` : `\nNo row below ${BASELINE_THRESHOLD}× ${base.label}.`);
  console.log(`\n| Benchmark | Metric | ${nowLabel} | ${thenLabel} | Now vs then (>1 better) |\n|---|---|---:|---:|---:|`);
  for (const r of withBase) console.log(`| ${r.bench} | ${r.metric} | ${fmt(r.ours)} ${r.unit} | ${fmt(r.baseline!.value)} ${r.unit} | ${vs(r) < BASELINE_THRESHOLD ? `**${fmt(vs(r))}** ⚠` : fmt(vs(r))} |`);
  return worse;
}
