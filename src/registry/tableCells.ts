// The cells of a Table row, as JSON, kept per stored object: objects never change once stored, so a
// cell that reads only the object is made once. A cell that depends on the time (an age) says until
// when its text holds (timedCell), and is remade only after that; any other cell that takes `now`
// is remade on every render.
import { humanDuration, parseRFC3339 } from '../apimachinery/duration.js';
import type { PrinterColumn } from './resource.js';
import type { KubeObject } from '../apimachinery/types.js';

type Cell = PrinterColumn['cell'];
type CellValue = ReturnType<Cell>;

/** A cell's value, unchanged for every time in [now, until). */
export interface TimedValue { value: CellValue; until: number }

const timed = new WeakMap<Cell, (obj: KubeObject, now: number) => TimedValue>();

/** A cell whose value depends on the time, with the instant it may next change, so rows can be cached. */
export function timedCell(f: (obj: KubeObject, now: number) => TimedValue): Cell {
  const cell: Cell = (obj, now) => f(obj, now).value;
  timed.set(cell, f);
  return cell;
}

/**
 * The first duration after `ms` at which humanDuration's text may change. In each of its ranges the
 * text is a function of the duration truncated to one unit (seconds, minutes, hours, days or
 * 365-day years), and every range starts on a multiple of its unit, so the text holds until the
 * next multiple. Not above `ms` (nothing to cache) for a negative duration past the 2 s tolerance.
 */
export function humanDurationChangesAt(ms: number): number {
  if (ms < 0) return ms <= -2000 ? ms : 1000; // "<invalid>"; then "0s" from -1999 ms up to 1 s
  const s = 1000, m = 60 * s, h = 60 * m, d = 24 * h;
  const unit = ms < 10 * m ? s : ms < 8 * h ? m : ms < 8 * d ? h : ms < 8 * 365 * d ? d : 365 * d;
  return (Math.floor(ms / unit) + 1) * unit;
}

/** The Age column (ConvertToHumanReadableDateType of metadata.creationTimestamp), cacheable. */
export function ageOf(creationTimestamp: string | undefined, now: number): TimedValue {
  const t = creationTimestamp === undefined ? null : parseRFC3339(creationTimestamp);
  if (t === null || t === undefined) return { value: '<unknown>', until: Infinity };
  // Whole milliseconds keep `t + …` exact; a fractional timestamp (never server-set) is not cached.
  return { value: humanDuration(now - t), until: Number.isInteger(t) ? t + humanDurationChangesAt(now - t) : now };
}

export const ageCell: Cell = timedCell((o, now) => ageOf(o.metadata.creationTimestamp, now));

/** JSON of one cell, as JSON.stringify writes it inside an array. */
function cellJson(v: CellValue): string {
  return JSON.stringify(v) ?? 'null';
}

interface CachedRow {
  columns: readonly PrinterColumn[];
  /** JSON of each cell that reads only the object; undefined for the others. */
  fixed: (string | undefined)[];
  /** Whether any cell depends on the time. */
  timeDependent: boolean;
  /** The cells array's JSON, valid for every time in [from, until). */
  json: string;
  from: number;
  until: number;
}

const rows = new WeakMap<KubeObject, CachedRow>();

/** Whether a cell reads only the object: it declares no `now` parameter, or none it could read. */
const readsOnlyObject = (c: Cell) => c.length < 2 && !timed.has(c);

/** The JSON of a row's cells array (`[…]`) for `obj` at time `now`. */
export function rowCells(columns: readonly PrinterColumn[], obj: KubeObject, now: number): string {
  let row = rows.get(obj);
  if (row !== undefined && row.columns === columns && (!row.timeDependent || (now >= row.from && now < row.until))) return row.json;
  if (row === undefined || row.columns !== columns) {
    const fixed = columns.map((c) => (readsOnlyObject(c.cell) ? cellJson(c.cell(obj, now)) : undefined));
    row = { columns, fixed, timeDependent: fixed.includes(undefined), json: '', from: now, until: Infinity };
    rows.set(obj, row);
  }
  let until = Infinity;
  const parts = row.fixed.slice();
  for (let i = 0; i < parts.length; i++) {
    if (parts[i] !== undefined) continue;
    const cell = columns[i].cell;
    const f = timed.get(cell);
    if (f) {
      const v = f(obj, now);
      parts[i] = cellJson(v.value);
      until = Math.min(until, v.until);
    } else {
      parts[i] = cellJson(cell(obj, now));
      until = now; // valid only at this instant: remade next time
    }
  }
  row.json = `[${parts.join(',')}]`;
  row.from = now;
  row.until = until;
  return row.json;
}
