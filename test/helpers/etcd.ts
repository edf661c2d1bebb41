// A throwaway etcd for storage tests: the control-plane harness's binary (built from Go modules by
// scripts/cluster-bins.sh), on free loopback ports, with its data in a temp dir. It can be killed and
// started again on the same ports and data (an etcd outage). Every etcd started here is SIGKILLed when
// this process exits, whatever the tests did.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectEtcd } from '../../src/storage/etcd3/client.js';
import { Etcd3Storage } from '../../src/storage/etcd3/etcd3Storage.js';
import { ensureClusterBinaries, freePort } from '../cluster/controlPlane.js';
import { COMPACTION_PREFIX, type MakeStorage } from '../storage/harness.js';

export interface TestEtcd {
  /** http://127.0.0.1:<client port> */
  readonly url: string;
  readonly dir: string;
  /** SIGKILLs the process (data kept), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data; resolves when healthy. */
  restart(): Promise<void>;
  /** Kills it and removes its data. Idempotent. */
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: an etcd that hangs (its connections stay open, nothing answers), then resumes. */
  pause(paused: boolean): void;
}

/** The largest request etcd accepts: room for a 3 MiB object (etcd's default, 1.5 MiB, is below our bound). */
const MAX_REQUEST_BYTES = 8 * 1024 * 1024;
const READY_TIMEOUT_MS = 20_000;

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

export async function startEtcd(): Promise<TestEtcd> {
  const binDir = await ensureClusterBinaries();
  const bin = join(binDir, 'etcd');
  if (!existsSync(bin)) throw new Error(`no etcd binary at ${bin} (scripts/cluster-bins.sh)`);
  const dir = mkdtempSync(join(tmpdir(), 'farm-etcd-'));
  dirs.add(dir);
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const log = join(dir, 'etcd.log');
  const args = [
    '--name=test', `--data-dir=${join(dir, 'data')}`,
    `--listen-client-urls=${url}`, `--advertise-client-urls=${url}`,
    `--listen-peer-urls=http://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-cluster=test=http://127.0.0.1:${peer}`,
    `--max-request-bytes=${MAX_REQUEST_BYTES}`, '--unsafe-no-fsync', '--log-level=warn',
  ];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async () => {
    const fd = openSync(log, 'a');
    const c = spawn(bin, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    child = c;
    live.add(c);
    exited = new Promise((resolve) => c.once('exit', () => { live.delete(c); resolve(); }));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (c.exitCode !== null || c.signalCode !== null) break;
      try {
        const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
        if (r.ok && ((await r.json()) as { health?: string }).health === 'true') return;
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
    c.kill('SIGKILL');
    throw new Error(`etcd not healthy within ${READY_TIMEOUT_MS} ms; its log:\n${readFileSync(log, 'utf8').slice(-3000)}`);
  };

  const kill = async () => {
    const c = child;
    child = undefined;
    if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await exited;
  };

  let stopped = false;
  try {
    await launch();
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    url, dir, kill,
    pause(paused: boolean) { child?.kill(paused ? 'SIGSTOP' : 'SIGCONT'); },
    async restart() {
      await kill();
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}

/**
 * The etcd3 backend as the storage contract suites' factory: every backend its own key prefix on one
 * etcd started on first use (`stop()` it after the suite). Compaction writes past the watch cache's
 * history (2 x historyLimit + 1 changes under COMPACTION_PREFIX) and then compacts etcd at that revision,
 * so an older resourceVersion is gone from both.
 */
export function etcd3Backends(): { make: MakeStorage; stop(): Promise<void> } {
  let etcd: Promise<TestEtcd> | undefined;
  let n = 0;
  const make: MakeStorage = async (opts = {}) => {
    etcd ??= startEtcd();
    const { url } = await etcd;
    const historyLimit = opts.historyLimit ?? 1000;
    const client = connectEtcd({ hosts: [url] });
    const storage = new Etcd3Storage({ client, prefix: `/registry/contract/${process.pid}-${++n}`, historyLimit });
    try {
      await storage.start();
    } catch (e) {
      client.close();
      throw e;
    }
    let fillers = 0;
    return {
      storage,
      view: storage.view,
      async compact() {
        // The watch cache keeps up to 2 x historyLimit changes: one more than that pushes every older one out.
        for (const end = fillers + 2 * historyLimit + 1; fillers < end; fillers++) {
          const name = `filler-${fillers}`;
          await storage.create(`${COMPACTION_PREFIX}${name}`, { apiVersion: 'v1', kind: 'Filler', metadata: { name } });
        }
        await storage.compact(storage.resourceVersion);
      },
      async close() {
        await storage.stop();
        client.close();
      },
    };
  };
  return { make, stop: async () => { if (etcd) await (await etcd).stop(); } };
}
