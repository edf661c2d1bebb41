// The machine's load during a benchmark: other engineers run tests on the same 2 cores, so every
// section records the 1-minute load average and the CPU time the whole machine spent outside the
// processes the benchmark knows about (from /proc/stat and /proc/<pid>/stat).
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { procCpuMs } from '../peers/procStat.js';
import { nowMs } from './common.js';

/**
 * Busy CPU time of the whole machine, ms: user + nice + system + irq + softirq (a process's stime also
 * holds the interrupts that arrived while it ran, e.g. the loopback traffic it causes; steal is left out).
 */
function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'latin1').split('\n')[0]; // "cpu  user nice system idle iowait irq softirq steal ..."
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  return ((f[0] + f[1] + f[2] + f[5] + f[6]) * 1000) / 100; // /proc/stat counts in USER_HZ, 100 on Linux
}

function selfAndReapedChildrenMs(): number {
  const stat = readFileSync('/proc/self/stat', 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / 100; // utime stime cutime cstime
}

export interface LoadSample { section: string; load1: number; seconds: number; otherCores: number }

/**
 * `mark(section)` closes the previous section: its length, the load average at its end, and how many
 * cores' worth of CPU went to processes outside `known()` (other engineers' work) during it.
 */
export class LoadSampler {
  readonly samples: LoadSample[] = [];
  private section = 'start';
  private t0 = nowMs();
  private busy0 = machineBusyMs();
  private known0 = 0;

  constructor(private readonly known: () => number[]) { this.known0 = this.knownCpuMs(); }

  /** The known live processes, plus this process and every child it has reaped (kubectl, servers started and stopped). */
  private knownCpuMs(): number {
    let ms = selfAndReapedChildrenMs();
    for (const p of this.known()) { try { ms += procCpuMs(p); } catch { /* exited */ } }
    return ms;
  }

  mark(next: string): LoadSample {
    const t = nowMs();
    const busy = machineBusyMs();
    const known = this.knownCpuMs();
    const seconds = (t - this.t0) / 1000;
    const other = seconds > 0 ? Math.max(0, (busy - this.busy0) - (known - this.known0)) / (seconds * 1000) : 0;
    const s = { section: this.section, load1: loadavg()[0], seconds, otherCores: other };
    if (seconds >= 1) this.samples.push(s); // shorter ones (between two rows) say nothing about others' load
    [this.section, this.t0, this.busy0, this.known0] = [next, t, busy, this.knownCpuMs()];
    return s;
  }
}
