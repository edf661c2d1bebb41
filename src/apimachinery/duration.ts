// Human-readable durations and ages, as k8s.io/apimachinery/pkg/util/duration and the Table
// conversion (api/meta/table.ConvertToHumanReadableDateType) print them.

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;

/** Go's int(x) / integer division on a time.Duration: truncation toward zero. */
const trunc = (x: number) => Math.trunc(x);

/** duration.HumanDuration: ~2-3 significant figures, e.g. 0s, 119s, 3m10s, 70m, 3h1m, 47h, 2d1h, 8d, 2y1d, 8y. */
export function humanDuration(ms: number): string {
  // Up to 2s in the future (machine clock skew) counts as now.
  const seconds = trunc(ms / second);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = trunc(ms / minute);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = trunc(ms / hour);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${trunc(hours / 24)}d` : `${trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = trunc(hours / 24) % 365;
    const y = trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${trunc(hours / 24 / 365)}y`;
}

/** duration.ShortHumanDuration: one unit only, e.g. 59s, 1m, 23h, 364d, 2y. */
export function shortHumanDuration(ms: number): string {
  const seconds = trunc(ms / second);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60) return `${seconds}s`;
  const minutes = trunc(ms / minute);
  if (minutes < 60) return `${minutes}m`;
  const hours = trunc(ms / hour);
  if (hours < 24) return `${hours}h`;
  if (hours < 24 * 365) return `${trunc(hours / 24)}d`;
  return `${trunc(ms / hour / 24 / 365)}y`;
}

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/**
 * metav1.Time.UnmarshalQueryParameter: Go's time.Parse(time.RFC3339, s) as epoch milliseconds.
 * "" and "null" are the zero time (returned as null); anything unparsable is undefined.
 */
const parsed = new Map<string, number | null | undefined>();

/** Memoized: every Table row's Age parses its object's creationTimestamp again. */
export function parseRFC3339(s: string): number | null | undefined {
  let t = parsed.get(s);
  if (t === undefined && !parsed.has(s)) {
    if (parsed.size >= 50_000) parsed.clear();
    t = parseRFC3339Uncached(s);
    parsed.set(s, t);
  }
  return t;
}

function parseRFC3339Uncached(s: string): number | null | undefined {
  if (s === '' || s === 'null') return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/.exec(s);
  if (!m) return undefined;
  const [year, month, day, hh, mm, ss] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hh > 23 || mm > 59 || ss > 59) return undefined;
  let offset = 0;
  if (!m[8]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 24 || om > 60) return undefined; // Go tolerates +24:00 and +00:60
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * minute;
  }
  const frac = m[7] ? Number(`0.${m[7]}`) * second : 0;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hh, mm, ss, 0);
  const t = d.getTime() + frac - offset;
  return t === zeroTime ? null : t;
}

/** Go's zero time.Time, 0001-01-01T00:00:00Z, which IsZero() and prints as <unknown>. */
const zeroTime = (() => { const d = new Date(0); d.setUTCFullYear(1, 0, 1); d.setUTCHours(0, 0, 0, 0); return d.getTime(); })();

/**
 * The Age column: ConvertToHumanReadableDateType(metadata.creationTimestamp), i.e. HumanDuration
 * of the time since, or `<unknown>` for a missing / zero / unparsable timestamp (an unstructured
 * object's GetCreationTimestamp() reads those as the zero time).
 */
export function age(creationTimestamp: string | undefined, now: number = Date.now()): string {
  const t = creationTimestamp === undefined ? null : parseRFC3339(creationTimestamp);
  if (t === null || t === undefined) return '<unknown>';
  return humanDuration(now - t);
}

/**
 * A CRD additionalPrinterColumn of type "date" (tableconvertor.cellForJSONValue): null for a
 * non-string, `<invalid>` for an unparsable string, otherwise as age().
 */
export function dateCell(value: unknown, now: number = Date.now()): string | null {
  if (value === null || value === undefined || typeof value !== 'string') return null;
  const t = parseRFC3339(value);
  if (t === undefined) return '<invalid>';
  if (t === null) return '<unknown>';
  return humanDuration(now - t);
}

/** Milliseconds per unit of Go's time.ParseDuration (µ as U+00B5 and U+03BC, as Go accepts both). */
const goUnits: Record<string, number> = {
  ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: second, m: minute, h: hour,
};

/**
 * Go's time.ParseDuration ("5m", "1h30m", "1.5s", "0"), in milliseconds; undefined when it does not
 * parse. Flags such as kube's --etcd-compaction-interval take this form.
 */
export function parseGoDuration(text: string): number | undefined {
  const m = /^([-+]?)(.*)$/s.exec(text)!;
  const body = m[2];
  if (body === '0') return 0;
  if (body === '') return undefined;
  let total = 0;
  const part = /([0-9]*(?:\.[0-9]*)?)([^0-9.]+)/y;
  for (let at = 0; at < body.length;) {
    part.lastIndex = at;
    const p = part.exec(body);
    // Go wants digits on at least one side of the dot, and a known unit after every number.
    if (!p || p[1] === '' || p[1] === '.' || goUnits[p[2]] === undefined) return undefined;
    total += Number(p[1]) * goUnits[p[2]];
    at = part.lastIndex;
  }
  // Go's limit: about 290 years in nanoseconds.
  if (total > 9_223_372_036_854) return undefined;
  return m[1] === '-' ? -total : total;
}
