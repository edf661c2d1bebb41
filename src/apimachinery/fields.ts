// Field selectors, ported from k8s.io/apimachinery v0.33 (pkg/fields/selector.go) so that parse
// errors carry upstream's exact messages. Every parse failure is an ApiError 400 BadRequest, as
// kube-apiserver answers for a bad ?fieldSelector= (handlers/get.go wraps err.Error() in NewBadRequest).

import { errors } from './status.js';
import { compareBytes } from './goCompat.js';

/** '==' is parsed as '=' (upstream makes both a hasTerm, printed with '='). */
export type FieldOperator = '=' | '!=';

export interface FieldRequirement {
  readonly field: string;
  readonly operator: FieldOperator;
  /** Unescaped value. */
  readonly value: string;
}

/** The AND of its requirements, in upstream's order (terms sorted as strings). */
export type FieldSelector = readonly FieldRequirement[];

/** fields.EscapeValue: escapes \, ',' and '=' with a backslash. */
export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** fields.UnescapeValue. Errors carry upstream's messages (the rune of an unescaped char is printed as its number). */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c === '\\' || c === ',' || c === '=') out += c;
      else throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      inSlash = false;
      continue;
    }
    if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') throw errors.badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    else out += c;
  }
  if (inSlash) throw errors.badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

function splitTerms(sel: string): string[] {
  if (sel.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < sel.length; i++) {
    const c = sel[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') { terms.push(sel.slice(start, i)); start = i + 1; }
  }
  terms.push(sel.slice(start));
  return terms;
}

const termOperators = ['!=', '==', '='] as const;

function splitTerm(term: string): { lhs: string; op: (typeof termOperators)[number]; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of termOperators) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

/**
 * Parses a field selector as fields.ParseSelector does, then checks each field against
 * `supported` (when given) as the custom-resource converter's ConvertFieldLabel does.
 * @throws ApiError 400 BadRequest: upstream's parse messages, or `field label not supported: <field>`.
 */
export function parseFieldSelector(s: string, supported?: readonly string[]): FieldSelector {
  const parts = splitTerms(s).sort(compareBytes);
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw errors.badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const value = unescapeFieldValue(t.rhs);
    if (t.lhs === '' && value === '') continue; // upstream's Transform turns "=" / "!=" into Everything()
    reqs.push({ field: t.lhs, operator: t.op === '!=' ? '!=' : '=', value });
  }
  for (const r of reqs) {
    if (supported && !supported.includes(r.field)) throw errors.badRequest(`field label not supported: ${r.field}`);
  }
  return reqs;
}

/** Whether the object's fields satisfy every requirement; a missing field reads as "" (fields.Set.Get). */
export function matchesFields(sel: FieldSelector, get: (field: string) => string | undefined): boolean {
  for (const r of sel) {
    const v = get(r.field) ?? '';
    if (r.operator === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/** RequiresExactMatch: the value of the first `field=value` (or `==`) requirement on `field`. */
export function fieldSelectorSingleValue(sel: FieldSelector, field: string): string | undefined {
  return sel.find((r) => r.field === field && r.operator === '=')?.value;
}

/** Selector.String(): terms joined by ',', values escaped. */
export function fieldSelectorToString(sel: FieldSelector): string {
  return sel.map((r) => `${r.field}${r.operator}${escapeFieldValue(r.value)}`).join(',');
}
