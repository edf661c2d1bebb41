// Benchmark 5: start-to-ready. Spawns `node dist/main.js --cert-dir <dir> --port P` (certificates and
// token already there) and polls /readyz with the token until it answers 200. Peer: a minimal
// fastify HTTPS hello-world (bench/procs/helloFastify.mjs) started and polled the same way.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { BENCH_DIR, freePort, median, nowMs, REPO_DIR, sleep } from '../lib/common.js';
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

async function timeToReady(script: string, ctx: Ctx, ca: Buffer): Promise<number> {
  const port = await freePort();
  const t0 = nowMs();
  const child = spawn(process.execPath, [script, '--cert-dir', ctx.certDir, '--port', String(port)], { cwd: REPO_DIR, stdio: ['ignore', 'ignore', 'pipe'] });
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

export async function startupSuite(ctx: Ctx): Promise<SuiteResult> {
  const runs = ctx.quick ? 3 : 5;
  const main = join(REPO_DIR, 'dist', 'main.js');
  // --quick skips the build when dist/main.js is newer than every file under src/.
  const fresh = ctx.quick && existsSync(main) && statSync(main).mtimeMs > newestMtime(join(REPO_DIR, 'src'));
  ctx.log(fresh ? 'start-to-ready: dist/ is newer than src/, not rebuilding' : 'start-to-ready: npx tsc -p tsconfig.json');
  const build = fresh ? { status: 0, stdout: '', stderr: '' } : spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: REPO_DIR, encoding: 'utf8' });
  if (build.status !== 0) {
    if (!existsSync(main)) throw new Error(`tsc failed and there is no dist/main.js:\n${build.stdout}${build.stderr}`);
    ctx.log(`  warning: tsc exited ${build.status} (type errors elsewhere?); timing the emitted dist/main.js anyway`);
  }
  const ca = readFileSync(join(ctx.certDir, 'ca.crt'));
  const hello = join(BENCH_DIR, 'procs', 'helloFastify.mjs');
  const ours: number[] = [];
  const peer: number[] = [];
  // One untimed start each warms the OS file cache.
  await timeToReady(main, ctx, ca);
  await timeToReady(hello, ctx, ca);
  for (let i = 0; i < runs; i++) {
    ours.push(await timeToReady(main, ctx, ca));
    peer.push(await timeToReady(hello, ctx, ca));
    ctx.log(`  run ${i + 1}: dist/main.js ${ours[i].toFixed(0)} ms, hello-world ${peer[i].toFixed(0)} ms`);
  }
  const o = median(ours);
  const p = median(peer);
  const rows: Row[] = [{
    bench: 'Start to ready (/readyz 200)', metric: `median of ${runs}`, unit: 'ms', ours: o, peer: p, ratio: o / p,
    reading: 'ours/fastify hello-world; higher is slower', note: 'existing certs; polled every 5 ms',
  }];
  return { rows, detail: { runs, ours, peer, built: !fresh, tscExit: build.status } };
}
