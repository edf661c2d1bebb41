// What every suite gets and returns.
import type { Tree } from '../lib/trees.js';

export interface Ctx {
  quick: boolean;
  /** `--rounds <n>`: rounds per http comparison instead of 2 (quick) / 5 (full); more rounds, narrower noise. */
  rounds?: number;
  /** Temporary directory with ca.crt, tls.crt, tls.key and token (ensureDevCerts + ensureToken). */
  certDir: string;
  token: string;
  log(msg: string): void;
  /** The code under test: the working tree, or `--current <rev>`. Start its farmServer/heap procs from here. */
  ours: Tree;
  /** `--baseline <rev>`: suites that start our server also measure this tree, interleaved with `ours`. */
  baseline?: Tree;
}

/** Ours now vs ours at the baseline revision, for the same row. */
export interface BaselineCell {
  /** The baseline's value of the row's metric (same unit as `ours`). */
  value: number;
  /** ours / baseline: the median of per-round ratios where the suite has rounds. */
  ratio: number;
  /** Which way is better for this metric: req/s 'higher', latency, CPU, bytes 'lower'. */
  better: 'higher' | 'lower';
}

/** One line of the results table: ours vs the peer in the same run. */
export interface Row {
  bench: string;
  metric: string;
  unit: string;
  ours: number;
  peer: number;
  /** ours / peer. */
  ratio: number;
  /** How to read the ratio, e.g. "lower is slower". */
  reading: string;
  note?: string;
  /** Only with --baseline, on rows of suites that start our server. */
  baseline?: BaselineCell;
}

export interface SuiteResult { rows: Row[]; detail: Record<string, unknown> }
