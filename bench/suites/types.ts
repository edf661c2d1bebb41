// What every suite gets and returns.
export interface Ctx {
  quick: boolean;
  /** Temporary directory with ca.crt, tls.crt, tls.key and token (ensureDevCerts + ensureToken). */
  certDir: string;
  token: string;
  log(msg: string): void;
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
}

export interface SuiteResult { rows: Row[]; detail: Record<string, unknown> }
