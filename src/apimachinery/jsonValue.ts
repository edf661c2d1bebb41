// JSON values of any depth the decoder admits (10,000 levels, as kube's): every walk here is
// iterative, because V8's recursion (and so structuredClone, JSON.stringify) overflows near 3,000.

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject { [k: string]: Json }

/** kube's decoders (encoding/json, goyaml) refuse nesting deeper than this with "exceeded max depth". */
export const MAX_NESTING_DEPTH = 10_000;

export const isJsonObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasOwn = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

/**
 * Whether every own value passes: without Object.values' array (labels/annotations come by the
 * 100,000, and several checks look at them).
 */
export function everyValue(o: object, pred: (v: unknown) => boolean): boolean {
  for (const k in o) if (hasOwn(o, k) && !pred((o as Record<string, unknown>)[k])) return false;
  return true;
}

/** Sets an own, enumerable data property: safe for "__proto__", "constructor", ... */
export function setOwn(o: JsonObject, k: string, v: Json): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

export function getOwn(o: JsonObject, k: string): Json | undefined {
  return hasOwn(o, k) ? o[k] : undefined;
}

/** Deep copy into fresh plain objects/arrays; undefined members are dropped, an undefined root is null. */
export function cloneJson(v: unknown): Json {
  if (typeof v !== 'object' || v === null) return v === undefined ? null : (v as Json);
  const root: Json = Array.isArray(v) ? [] : {};
  const stack: [unknown, Json[] | JsonObject][] = [[v, root]];
  while (stack.length) {
    const [src, dst] = stack.pop()!;
    const put = (k: string | number, x: unknown) => {
      let copy: Json;
      if (typeof x === 'object' && x !== null) {
        copy = Array.isArray(x) ? [] : {};
        stack.push([x, copy]);
      } else {
        copy = x === undefined ? null : (x as Json);
      }
      if (Array.isArray(dst)) dst[k as number] = copy;
      else setOwn(dst, k as string, copy);
    };
    if (Array.isArray(src)) {
      for (let i = 0; i < src.length; i++) put(i, src[i]);
    } else {
      const o = src as Record<string, unknown>;
      for (const k of Object.keys(o)) if (o[k] !== undefined) put(k, o[k]);
    }
  }
  return root;
}

/** Drops null members of objects at any depth (null items of arrays stay), in place. */
export function pruneNulls(v: Json): Json {
  const stack: Json[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (Array.isArray(x)) {
      for (const item of x) if (typeof item === 'object' && item !== null) stack.push(item);
    } else if (isJsonObject(x)) {
      for (const k of Object.keys(x)) {
        const m = x[k];
        if (m === null) delete x[k];
        else if (typeof m === 'object') stack.push(m);
      }
    }
  }
  return v;
}

export function jsonEqual(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  while (stack.length) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i]]);
    } else if (isJsonObject(x)) {
      if (!isJsonObject(y)) return false;
      const kx = Object.keys(x);
      if (kx.length !== Object.keys(y).length) return false;
      for (const k of kx) {
        if (!hasOwn(y, k)) return false;
        stack.push([x[k], y[k]]);
      }
    } else {
      return false;
    }
  }
  return true;
}

/**
 * Compact JSON of any depth. `sortKeys` and `escapeHtml` give Go's json.Marshal of a map (keys in
 * byte order; <, >, & and U+2028/9 escaped).
 */
export function stringifyJson(v: unknown, opts: { sortKeys?: boolean; escapeHtml?: boolean } = {}): string {
  const parts: string[] = [];
  const emit = (s: string) => parts.push(s);
  // Work items: a value to write, or a literal (closing bracket, comma, key) already formatted.
  const stack: ({ v: unknown } | string)[] = [{ v }];
  while (stack.length) {
    const item = stack.pop()!;
    if (typeof item === 'string') { emit(item); continue; }
    const x = item.v;
    if (x === null || x === undefined || typeof x === 'function') { emit('null'); continue; }
    if (typeof x !== 'object') { emit(JSON.stringify(x) ?? 'null'); continue; }
    const items: ({ v: unknown } | string)[] = [];
    if (Array.isArray(x)) {
      emit('[');
      x.forEach((e, i) => { if (i) items.push(','); items.push({ v: e }); });
      items.push(']');
    } else {
      emit('{');
      const o = x as Record<string, unknown>;
      let keys = Object.keys(o).filter((k) => o[k] !== undefined);
      if (opts.sortKeys) keys = keys.sort(compareUtf8);
      keys.forEach((k, i) => { items.push(`${i ? ',' : ''}${JSON.stringify(k)}:`); items.push({ v: o[k] }); });
      items.push('}');
    }
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]);
  }
  const out = parts.join('');
  return opts.escapeHtml ? out.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : out;
}

/** Byte-wise UTF-8 order, as Go sorts map keys. */
function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Length in bytes of the value's compact JSON, without building it. */
export function jsonByteSize(v: unknown): number {
  let size = 0;
  const stack: unknown[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x === 'string') size += Buffer.byteLength(JSON.stringify(x));
    else if (typeof x !== 'object' || x === null) size += String(x ?? null).length;
    else if (Array.isArray(x)) { size += 1 + Math.max(x.length, 1); for (const e of x) stack.push(e); }
    else {
      const keys = Object.keys(x);
      size += 1 + Math.max(keys.length, 1);
      for (const k of keys) { size += Buffer.byteLength(JSON.stringify(k)) + 1; stack.push((x as Record<string, unknown>)[k]); }
    }
  }
  return size;
}
