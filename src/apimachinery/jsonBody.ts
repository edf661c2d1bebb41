// Decoding a JSON request body as kube's decoders do: nesting deeper than 10,000 is refused before
// anything builds it, and duplicate keys are found (JSON.parse keeps the last silently; sigs.k8s.io/json
// reports `duplicate field "a.b[0].c"` for fieldValidation to act on).
import { MAX_NESTING_DEPTH } from './jsonValue.js';
import { errors } from './status.js';

export interface DecodedJson {
  value: unknown;
  /**
   * Strict decoding errors about repeated keys: for JSON each key that appears twice in one object, in
   * the order met, as sigs.k8s.io/json words them; for YAML (yamlCodec.ts) one error naming them all.
   */
  duplicateFields: string[];
  /**
   * Top-level and second-level fields whose number JSON.parse cannot keep exact for an int64 field,
   * with the literal as written: a fraction or an exponent (`5.0`, `1e2`: integers to JSON.parse,
   * refused by Go's decoder) or more than 15 digits (past 2^53 a double rounds).
   */
  fractionLiterals: Map<string, string>;
}

interface Level { keys?: Set<string>; key?: string; index: number; isArray: boolean }

export function decodeJsonBody(text: string): DecodedJson {
  const { duplicateFields, fractionLiterals } = scan(text);
  return { duplicateFields, fractionLiterals, value: parse(text) };
}

/** The same, letting other requests run between the scan and the parse of a large body (~100 ms each at 3 MiB). */
export async function decodeLargeJsonBody(text: string): Promise<DecodedJson> {
  if (text.length < largeBody) return decodeJsonBody(text);
  const { duplicateFields, fractionLiterals } = scan(text);
  await new Promise<void>((resolve) => setImmediate(resolve));
  const value = parse(text);
  await new Promise<void>((resolve) => setImmediate(resolve));
  return { duplicateFields, fractionLiterals, value };
}

const largeBody = 256 * 1024;

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw errors.badRequest(`the request body is not valid JSON: ${(e as Error).message}`);
  }
}

function pathOf(stack: Level[], key: string): string {
  let s = '';
  for (const l of stack) {
    if (l.isArray) s += `[${l.index}]`;
    else if (l.key !== undefined) s += s ? `.${l.key}` : l.key;
  }
  return s ? `${s}.${key}` : key;
}

/**
 * One pass over the text: depth and duplicate keys. Invalid JSON is left for JSON.parse to report
 * (the scan only has to be right for valid input and terminate for any input).
 */
function scan(text: string): { duplicateFields: string[]; fractionLiterals: Map<string, string> } {
  const dups: string[] = [];
  const fractions = new Map<string, string>();
  const result = { duplicateFields: dups, fractionLiterals: fractions };
  const stack: Level[] = [];
  const n = text.length;
  let expectKey = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    switch (c) {
      case 0x7b: // {
      case 0x5b: // [
        if (stack.length >= MAX_NESTING_DEPTH) {
          throw errors.badRequest(`the request body is not valid JSON: invalid character '${text[i]}' exceeded max depth of ${MAX_NESTING_DEPTH}`);
        }
        stack.push({ index: 0, isArray: c === 0x5b });
        expectKey = c === 0x7b;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        stack.pop();
        expectKey = false;
        break;
      case 0x2c: { // ,
        const top = stack[stack.length - 1];
        if (top?.isArray) top.index++;
        else if (top) expectKey = true;
        break;
      }
      case 0x22: { // "
        const end = stringEnd(text, i);
        if (end < 0) return result; // unterminated: JSON.parse reports it
        if (expectKey) {
          const top = stack[stack.length - 1];
          const raw = text.slice(i + 1, end);
          let key = raw;
          if (raw.includes('\\')) {
            try { key = JSON.parse(text.slice(i, end + 1)) as string; } catch { return result; }
          }
          top.keys ??= new Set();
          if (top.keys.has(key)) dups.push(`duplicate field ${JSON.stringify(pathOf(stack.slice(0, -1), key))}`);
          else top.keys.add(key);
          top.key = key;
          expectKey = false;
        }
        i = end;
        break;
      }
      case 0x2d: case 0x30: case 0x31: case 0x32: case 0x33: case 0x34: case 0x35: case 0x36: case 0x37: case 0x38: case 0x39: { // - 0-9
        numberLiteral.lastIndex = i;
        const lit = numberLiteral.exec(text)?.[0] ?? text[i];
        const top = stack[stack.length - 1];
        if (stack.length <= 2 && top && !top.isArray && top.key !== undefined && (lit.length > 15 || /[.eE]/.test(lit))) {
          fractions.set(pathOf(stack.slice(0, -1), top.key), lit);
        }
        i += lit.length - 1;
        break;
      }
    }
  }
  return result;
}

const numberLiteral = /-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?/y;

/** Index of the quote closing the string opened at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  let j = start;
  for (;;) {
    j = text.indexOf('"', j + 1);
    if (j < 0) return -1;
    let backslashes = 0;
    for (let k = j - 1; text.charCodeAt(k) === 0x5c; k--) backslashes++;
    if (backslashes % 2 === 0) return j;
  }
}
