// Go-compatibility helpers: reproduce how Go itself formats, orders and parses values
// (strconv, %#v, encoding/json), so that our messages match kube-apiserver's to the byte.

import { stringifyJson } from './jsonValue.js';

/** strconv.ParseInt(s, 10, 64) as a bigint; undefined where Go reports an error. */
export function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n > 9223372036854775807n || n < -9223372036854775808n ? undefined : n;
}

/** Go's %q (strconv.Quote) for a string. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (ch) {
      case '"': out += '\\"'; continue;
      case '\\': out += '\\\\'; continue;
      case '\x07': out += '\\a'; continue;
      case '\b': out += '\\b'; continue;
      case '\f': out += '\\f'; continue;
      case '\n': out += '\\n'; continue;
      case '\r': out += '\\r'; continue;
      case '\t': out += '\\t'; continue;
      case '\v': out += '\\v'; continue;
    }
    if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (isPrint(ch)) out += ch;
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\ufffd'; // a lone surrogate: Go sees invalid UTF-8
    else if (c < 0x10000) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += `\\U${c.toString(16).padStart(8, '0')}`;
  }
  return out + '"';
}

/** unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
export function isPrint(ch: string): boolean {
  return ch === ' ' || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch);
}

/** Go's byte-wise string order (UTF-8 order is code point order). */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Below U+D800 UTF-16 code-unit order is code-point order; surrogates need the code points.
    if (x < 0xd800 || y < 0xd800) return x < y ? -1 : 1;
    return compareCodePoints(a.slice(i), b.slice(i));
  }
  return a.length < b.length ? -1 : 1;
}

function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** strconv.Atoi: optional sign, decimal digits, int64 range. */
export function atoi(key: string): number | undefined {
  const n = parseInt64(key);
  return n === undefined ? undefined : Number(n);
}

/** The name encoding/json gives a JSON value's type in UnmarshalTypeError. */
export function goJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'object': return 'object';
    case 'string': return 'string';
    case 'boolean': return 'bool';
    default: return 'number';
  }
}

/** json.Marshal of the value as Go prints it: object keys sorted, <, >, & and U+2028/9 escaped. */
export function goJSON(v: unknown): string {
  return stringifyJson(v ?? null, { sortKeys: true, escapeHtml: true });
}

/** A bad value printed verbatim: Go's %#v of a type JSON cannot express (a uint64 zero prints as 0x0). */
export class GoLiteral {
  constructor(readonly text: string) {}
  toString(): string { return this.text; }
}
