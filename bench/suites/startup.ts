// Benchmark 5: start-to-ready. Spawns `node dist/farm-apiserver.js --cert-dir <dir> --port P` (the
// bundle npm start runs; dist/main.js in trees from before scripts/bundle.ts; certificates and
// token already there) and polls /readyz with the token until it answers 200. Peer: a minimal
// fastify HTTPS hello-world (bench/procs/helloFastify.mjs) started and polled the same way.
// With --baseline, that commit's build (in its worktree) takes a turn in every run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join, relative } from 'node:path';
import { BENCH_DIR, freePort, median, nowMs, REPO_DIR, sleep } from '../lib/common.js';
import type { Tree } from '../lib/trees.js';
import type { Ctx, Row, SuiteResult } from './types.js';

function readyz(port: number, token: string, ca: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', ca, servername: 'localhost', agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => req.destroy());
    req.end();
  });
}

async function timeToReady(script: string, ctx: Ctx, ca: Buffer, cwd = REPO_DIR): Promise<number> {
  const port = await freePort();
  const t0 = nowMs();
  const child = spawn(process.execPath, [script, '--cert-dir', ctx.certDir, '--port', String(port)], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${stderr.slice(0, 500)}`);
      if ((await readyz(port, ctx.token, ca)) === 200) return nowMs() - t0;
      if (nowMs() - t0 > 30_000) throw new Error(`${script} not ready within 30 s: ${stderr.slice(0, 500)}`);
      await sleep(5);
    }
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(5000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** `npx tsc -p tsconfig.json` (unless --quick and its dist/main.js is newer than its src/), then the bundle. */
function build(ctx: Ctx, tree: Tree): { main: string; built: boolean; tscExit: number | null } {
  const main = join(tree.root, 'dist', 'main.js');
  const fresh = ctx.quick && existsSync(main) && statSync(main).mtimeMs > newestMtime(join(tree.root, 'src'));
  const where = tree.root === REPO_DIR ? '' : ` (${tree.label})`;
  ctx.log(fresh ? `start-to-ready: dist/ is newer than src/, not rebuilding${where}` : `start-to-ready: npx tsc -p tsconfig.json${where}`);
  const r = fresh ? { status: 0, stdout: '', stderr: '' } : spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: tree.root, encoding: 'utf8' });
  if (r.status !== 0) {
    if (!existsSync(main)) throw new Error(`tsc failed${where} and there is no dist/main.js:\n${r.stdout}${r.stderr}`);
    ctx.log(`  warning: tsc exited ${r.status}${where} (type errors elsewhere?); timing the emitted dist/main.js anyway`);
  }
  // Trees with scripts/bundle.ts ship the bundled entry point (what `npm start` and the image run).
  if (!existsSync(join(tree.root, 'scripts', 'bundle.ts'))) return { main, built: !fresh, tscExit: r.status };
  const b = spawnSync('npx', ['tsx', 'scripts/bundle.ts'], { cwd: tree.root, encoding: 'utf8' });
  if (b.status !== 0) throw new Error(`scripts/bundle.ts failed${where}:\n${b.stdout}${b.stderr}`);
  return { main: b.stdout.trim(), built: true, tscExit: r.status };
}

export async function startupSuite(ctx: Ctx): Promise<SuiteResult> {
  const runs = ctx.quick ? 3 : 5;
  const ours = build(ctx, ctx.ours);
  const base = ctx.baseline ? build(ctx, ctx.baseline) : undefined;
  const ca = readFileSync(join(ctx.certDir, 'ca.crt'));
  const hello = join(BENCH_DIR, 'procs', 'helloFastify.mjs');
  const starts = { ours: [] as number[], peer: [] as number[], baseline: [] as number[] };
  // Each run starts every server once; with a baseline the order reverses every other run (ABC CBA).
  const contenders: [keyof typeof starts, () => Promise<number>][] = [
    ['ours', () => timeToReady(ours.main, ctx, ca, ctx.ours.root)],
    ['peer', () => timeToReady(hello, ctx, ca)],
  ];
  if (base) contenders.push(['baseline', () => timeToReady(base.main, ctx, ca, ctx.baseline!.root)]);
  // One untimed start each warms the OS file cache.
  for (const [, start] of contenders) await start();
  for (let i = 0; i < runs; i++) {
    for (const [who, start] of i % 2 === 0 || !base ? contenders : [...contenders].reverse()) starts[who].push(await start());
    ctx.log(`  run ${i + 1}: ${relative(ctx.ours.root, ours.main)} ${starts.ours[i].toFixed(0)} ms, hello-world ${starts.peer[i].toFixed(0)} ms${base ? `, ${ctx.baseline!.label} ${starts.baseline[i].toFixed(0)} ms` : ''}`);
  }
  const o = median(starts.ours);
  const p = median(starts.peer);
  const rows: Row[] = [{
    bench: 'Start to ready (/readyz 200)', metric: `median of ${runs}`, unit: 'ms', ours: o, peer: p, ratio: o / p,
    reading: 'ours/fastify hello-world; higher is slower', note: 'existing certs; polled every 5 ms',
    ...(base && { baseline: { value: median(starts.baseline), ratio: o / median(starts.baseline), better: 'lower' as const } }),
  }];
  return { rows, detail: { runs, ours: starts.ours, peer: starts.peer, built: ours.built, tscExit: ours.tscExit, ...(base && { baseline: starts.baseline, baselineBuild: base }) } };
}
