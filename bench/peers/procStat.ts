// Another process's CPU time and RSS from /proc (Linux), its pid by command line, and CPU pinning
// with taskset (all threads), for servers the benchmark did not fork itself.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_S = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** User + system CPU time of the whole process (all threads), ms; resolution 1/CLK_TCK (10 ms). */
export function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  // Fields after the command (which may hold spaces) start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_S; // utime, stime (fields 14 and 15)
}

/** Resident set size, bytes (VmRSS). */
export function procRssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** The one live process whose NUL-separated argv contains every one of `parts` as a whole argument. */
export function findPid(parts: string[]): number {
  const found: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let argv: string[];
    try { argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0'); } catch { continue; }
    if (parts.every((p) => argv.includes(p))) found.push(Number(d));
  }
  if (found.length !== 1) throw new Error(`expected one process with ${parts.join(' ')}, found ${found.length}`);
  return found[0];
}

export const hasTaskset = spawnSync('taskset', ['-V']).status === 0;

/** Pins every thread of `pid` to the CPU list (e.g. "1" or "0-1"); false when taskset is missing or refused. */
export function pin(pid: number, cpus: string): boolean {
  if (!hasTaskset) return false;
  return spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' }).status === 0;
}
