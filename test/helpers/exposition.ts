// A parser of the Prometheus text exposition format (what /metrics serves), for the metrics tests.

export interface Sample { name: string; labels: Record<string, string>; value: number }

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` of each family. */
  types: Map<string, string>;
  help: Map<string, string>;
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (TYPE|HELP) (\S+) (.*)$/.exec(line);
    if (meta) { (meta[1] === 'TYPE' ? types : help).set(meta[2], meta[3]); continue; }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    samples.push({ name: m[1], labels: parseLabels(m[2] ?? ''), value: parseValue(m[3]) });
  }
  return { samples, types, help };
}

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (text === '') return out;
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
  let at = 1;
  for (re.lastIndex = at; ; at = re.lastIndex) {
    const m = re.exec(text);
    if (!m) break;
    out[m[1]] = m[2].replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
  }
  if (at !== text.length - 1) throw new Error(`bad labels: ${text}`);
  return out;
}

/** Samples of `name` whose labels include every pair of `match`. */
export function select(e: Exposition, name: string, match: Record<string, string> = {}): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** The sum of the values of `select(...)`. */
export function total(e: Exposition, name: string, match: Record<string, string> = {}): number {
  return select(e, name, match).reduce((a, s) => a + s.value, 0);
}

/** The label names of every sample of a family (the `le` of buckets left out), each set once. */
export function labelNameSets(e: Exposition, name: string): string[] {
  const sets = new Set(select(e, name).map((s) => Object.keys(s.labels).filter((k) => k !== 'le').sort().join(',')));
  return [...sets];
}

/** The `le` bounds of a histogram, as written, in order of first appearance. */
export function bucketBounds(e: Exposition, histogram: string): string[] {
  return [...new Set(select(e, `${histogram}_bucket`).map((s) => s.labels.le))];
}
