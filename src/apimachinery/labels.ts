// Label selectors, ported from k8s.io/apimachinery v0.33 (pkg/labels/selector.go) so that parse
// errors carry upstream's exact messages. Every parse failure is an ApiError 400 BadRequest, as
// kube-apiserver answers for a bad ?labelSelector= (handlers/get.go wraps err.Error() in NewBadRequest).

import { errors } from './status.js';
import { labelValueErrors as isValidLabelValue, qualifiedNameErrors as isQualifiedName } from './names.js';
import { compareBytes, goQuote, parseInt64 } from './goCompat.js';

/** selection.Operator values as upstream spells them. */
export type LabelOperator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Sorted and de-duplicated (upstream keeps them in a sets.String). Empty for exists / '!'. */
  readonly values: readonly string[];
}

/** The AND of its requirements, sorted by key as upstream does; empty matches everything. */
export type LabelSelector = readonly LabelRequirement[];

const binaryOperators: readonly string[] = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'];

type Tok =
  | 'Error' | 'EndOfString' | 'ClosedPar' | 'Comma' | 'DoesNotExist' | 'DoubleEquals' | 'Equals'
  | 'GreaterThan' | 'Identifier' | 'In' | 'LessThan' | 'NotEquals' | 'NotIn' | 'OpenPar';

const string2token: ReadonlyMap<string, Tok> = new Map<string, Tok>([
  [')', 'ClosedPar'], [',', 'Comma'], ['!', 'DoesNotExist'], ['==', 'DoubleEquals'],
  ['=', 'Equals'], ['>', 'GreaterThan'], ['in', 'In'], ['<', 'LessThan'],
  ['!=', 'NotEquals'], ['notin', 'NotIn'], ['(', 'OpenPar'],
]);

interface Item { tok: Tok; lit: string }

const isWhitespace = (ch: string) => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
const isSpecialSymbol = (ch: string) =>
  ch === '=' || ch === '!' || ch === '(' || ch === ')' || ch === ',' || ch === '>' || ch === '<';

const identifierRun = /[^=!(),><\t\r\n \0]*/y;

/** Upstream's Lexer: reads bytes, with NUL (or the end) meaning end of input. */
class Lexer {
  private pos = 0;
  constructor(private readonly s: string) {}

  private read(): string {
    if (this.pos < this.s.length) return this.s[this.pos++];
    return '\0';
  }

  private unread(): void { this.pos--; }

  private scanIDOrKeyword(): Item {
    // Up to a special symbol, whitespace or NUL, in one match (a 1 MiB selector is one header away).
    identifierRun.lastIndex = this.pos;
    const buf = identifierRun.exec(this.s)?.[0] ?? '';
    this.pos += buf.length;
    if (this.s[this.pos] === '\0') this.pos++; // upstream reads the NUL that ends the run, without unread
    const t = string2token.get(buf);
    return t !== undefined ? { tok: t, lit: buf } : { tok: 'Identifier', lit: buf };
  }

  private scanSpecialSymbol(): Item {
    let last: Item | undefined;
    let buf = '';
    for (;;) {
      const ch = this.read();
      if (ch === '\0') break;
      if (isSpecialSymbol(ch)) {
        buf += ch;
        const t = string2token.get(buf);
        if (t !== undefined) last = { tok: t, lit: buf };
        else if (last) { this.unread(); break; }
      } else { this.unread(); break; }
    }
    return last ?? { tok: 'Error', lit: `error expected: keyword found '${buf}'` };
  }

  lex(): Item {
    let ch = this.read();
    while (isWhitespace(ch)) ch = this.read();
    if (ch === '\0') return { tok: 'EndOfString', lit: '' };
    this.unread();
    return isSpecialSymbol(ch) ? this.scanSpecialSymbol() : this.scanIDOrKeyword();
  }
}

/** A parse failure carrying upstream's error text; turned into a 400 at the top. */
class SelectorSyntaxError { constructor(readonly message: string) {} }
const fail = (message: string): never => { throw new SelectorSyntaxError(message); };

type Ctx = 'KeyAndOperator' | 'Values';

class Parser {
  private items: Item[] = [];
  private position = 0;

  constructor(input: string) {
    const l = new Lexer(input);
    for (;;) {
      const it = l.lex();
      this.items.push(it);
      if (it.tok === 'EndOfString') break;
    }
  }

  private static inCtx(it: Item, ctx: Ctx): Item {
    if (ctx === 'Values' && (it.tok === 'In' || it.tok === 'NotIn')) return { tok: 'Identifier', lit: it.lit };
    return it;
  }

  private lookahead(ctx: Ctx): Item { return Parser.inCtx(this.items[this.position], ctx); }
  private consume(ctx: Ctx): Item { return Parser.inCtx(this.items[this.position++], ctx); }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead('Values');
      switch (tok) {
        case 'Identifier':
        case 'DoesNotExist': {
          reqs.push(this.parseRequirementWrapped());
          const t = this.consume('Values');
          if (t.tok === 'EndOfString') return reqs;
          if (t.tok === 'Comma') {
            const t2 = this.lookahead('Values');
            if (t2.tok !== 'Identifier' && t2.tok !== 'DoesNotExist') fail(`found '${t2.lit}', expected: identifier after ','`);
            break;
          }
          return fail(`found '${t.lit}', expected: ',' or 'end of string'`);
        }
        case 'EndOfString':
          return reqs;
        default:
          return fail(`found '${lit}', expected: !, identifier, or 'end of string'`);
      }
    }
  }

  private parseRequirementWrapped(): LabelRequirement {
    try {
      return this.parseRequirement();
    } catch (e) {
      if (e instanceof SelectorSyntaxError) fail(`unable to parse requirement: ${e.message}`);
      throw e;
    }
  }

  private parseRequirement(): LabelRequirement {
    const { key, operator: inferred } = this.parseKeyAndInferOperator();
    if (inferred === 'exists' || inferred === '!') return newRequirement(key, inferred, []);
    const operator = this.parseOperator();
    const values = operator === 'in' || operator === 'notin' ? this.parseValues() : this.parseExactValue();
    return newRequirement(key, operator, [...values].sort(compareBytes));
  }

  private parseKeyAndInferOperator(): { key: string; operator: LabelOperator | undefined } {
    let operator: LabelOperator | undefined;
    let t = this.consume('Values');
    if (t.tok === 'DoesNotExist') {
      operator = '!';
      t = this.consume('Values');
    }
    if (t.tok !== 'Identifier') fail(`found '${t.lit}', expected: identifier`);
    const keyErr = validateLabelKey(t.lit, '<nil>');
    if (keyErr) fail(keyErr);
    const next = this.lookahead('Values').tok;
    if ((next === 'EndOfString' || next === 'Comma') && operator !== '!') operator = 'exists';
    return { key: t.lit, operator };
  }

  private parseOperator(): LabelOperator {
    const { tok, lit } = this.consume('KeyAndOperator');
    switch (tok) {
      case 'In': return 'in';
      case 'Equals': return '=';
      case 'DoubleEquals': return '==';
      case 'GreaterThan': return 'gt';
      case 'LessThan': return 'lt';
      case 'NotIn': return 'notin';
      case 'NotEquals': return '!=';
      default: return fail(`found '${lit}', expected: ${binaryOperators.join(', ')}`);
    }
  }

  private parseValues(): Set<string> {
    const open = this.consume('Values');
    if (open.tok !== 'OpenPar') fail(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.lookahead('Values');
    switch (tok) {
      case 'Identifier':
      case 'Comma': {
        const s = this.parseIdentifiersList();
        if (this.consume('Values').tok !== 'ClosedPar') fail(`found '${lit}', expected: ')'`);
        return s;
      }
      case 'ClosedPar':
        this.consume('Values');
        return new Set(['']);
      default:
        return fail(`found '${lit}', expected: ',', ')' or identifier`);
    }
  }

  private parseIdentifiersList(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume('Values');
      switch (tok) {
        case 'Identifier': {
          s.add(lit);
          const t2 = this.lookahead('Values');
          if (t2.tok === 'Comma') continue;
          if (t2.tok === 'ClosedPar') return s;
          return fail(`found '${t2.lit}', expected: ',' or ')'`);
        }
        case 'Comma': {
          if (s.size === 0) s.add(''); // "(,"
          const t2 = this.lookahead('Values').tok;
          if (t2 === 'ClosedPar') { s.add(''); return s; } // ",)"
          if (t2 === 'Comma') { this.consume('Values'); s.add(''); } // ",,"
          break;
        }
        default:
          return fail(`found '${lit}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): Set<string> {
    const la = this.lookahead('Values').tok;
    if (la === 'EndOfString' || la === 'Comma') return new Set(['']);
    const { tok, lit } = this.consume('Values');
    if (tok === 'Identifier') return new Set([lit]);
    return fail(`found '${lit}', expected: identifier`);
  }
}

/** labels.NewRequirement's validation (for the operators the parser can produce). */
function newRequirement(key: string, operator: LabelOperator, values: readonly string[]): LabelRequirement {
  const errs: string[] = [];
  const keyErr = validateLabelKey(key, 'key');
  if (keyErr) errs.push(keyErr);
  if ((operator === 'gt' || operator === 'lt')) {
    values.forEach((v, i) => {
      if (parseInt64(v) === undefined) {
        errs.push(`values[${i}]: Invalid value: ${goQuote(v)}: for 'Gt', 'Lt' operators, the value must be an integer`);
      }
    });
  }
  values.forEach((v, i) => {
    const msgs = isValidLabelValue(v);
    if (msgs.length) errs.push(`values[${i}][${key}]: Invalid value: ${goQuote(v)}: ${msgs.join('; ')}`);
  });
  if (errs.length) fail(aggregate(errs));
  // A selector of thousands of `!key` terms is held by each of its watchers: one empty list serves them all.
  return { key, operator, values: values.length ? values : NO_VALUES };
}

const NO_VALUES: readonly string[] = Object.freeze([]);

/** utilerrors.Aggregate's Error(): one message alone, several de-duplicated within [a, b]. */
function aggregate(msgs: string[]): string {
  if (msgs.length === 1) return msgs[0];
  const uniq = [...new Set(msgs)];
  return uniq.length === 1 ? uniq[0] : `[${uniq.join(', ')}]`;
}

/**
 * Parses a label selector exactly as k8s labels.Parse does.
 * @throws ApiError 400 BadRequest with upstream's message.
 */
export function parseLabelSelector(s: string): LabelSelector {
  let reqs: LabelRequirement[];
  try {
    reqs = new Parser(s).parse();
  } catch (e) {
    if (e instanceof SelectorSyntaxError) throw errors.badRequest(e.message);
    throw e;
  }
  // upstream sorts by key; the sort is stable here, which upstream's is for small selectors
  return reqs.sort((a, b) => compareBytes(a.key, b.key));
}

// A long `in (…)` list is matched against every object of a list: look values up, don't scan them.
const valueSets = new WeakMap<LabelRequirement, Set<string>>();
function hasValue(r: LabelRequirement, v: string): boolean {
  if (r.values.length < 16) return r.values.includes(v);
  let set = valueSets.get(r);
  if (!set) valueSets.set(r, (set = new Set(r.values)));
  return set.has(v);
}

/** Whether the labels satisfy every requirement (an empty selector matches everything). */
export function matchesLabels(sel: LabelSelector, labels: Record<string, string> | undefined): boolean {
  if (sel.length < 16) return sel.every((r) => satisfies(r, labelOf(labels, r.key)));
  let split = splitSelectors.get(sel);
  if (!split) splitSelectors.set(sel, (split = splitByPresence(sel)));
  if (!split.needsKey.every((r) => satisfies(r, labelOf(labels, r.key)))) return false;
  // Requirements that an absent key satisfies: only the object's own labels can fail them. Whichever
  // is smaller is walked, so a long selector against an object with many labels costs the lesser of both.
  if (!labels) return true;
  const keys = labelKeys(labels);
  if (split.absentOk.size < keys.length) {
    for (const [k, reqs] of split.absentOk) {
      const v = labelOf(labels, k);
      if (v !== undefined && !satisfiesAll(reqs, v)) return false;
    }
    return true;
  }
  for (const k of keys) {
    const reqs = split.absentOk.get(k);
    if (reqs !== undefined && !satisfiesAll(reqs, labels[k])) return false;
  }
  return true;
}

/** A stored object's labels are matched by every watcher's selector: their keys are listed once. */
const keysOfLabels = new WeakMap<Record<string, string>, string[]>();
function labelKeys(labels: Record<string, string>): string[] {
  let keys = keysOfLabels.get(labels);
  if (!keys) keysOfLabels.set(labels, (keys = Object.keys(labels)));
  return keys;
}

const labelOf = (labels: Record<string, string> | undefined, k: string): string | undefined =>
  labels && Object.prototype.hasOwnProperty.call(labels, k) ? labels[k] : undefined;

/**
 * A long selector checked against every object of a list: requirements a missing label satisfies
 * (!=, notin, !) are indexed by key, so an object costs its own labels, not the selector's length.
 */
const splitSelectors = new WeakMap<LabelSelector, { needsKey: LabelRequirement[]; absentOk: Map<string, KeyRequirements> }>();
/** The requirements on one key: nearly always one, kept without a list around it. */
type KeyRequirements = LabelRequirement | LabelRequirement[];
const satisfiesAll = (reqs: KeyRequirements, v: string | undefined): boolean =>
  (Array.isArray(reqs) ? reqs.every((r) => satisfies(r, v)) : satisfies(reqs as LabelRequirement, v));
function splitByPresence(sel: LabelSelector) {
  const needsKey: LabelRequirement[] = [];
  const absentOk = new Map<string, KeyRequirements>();
  for (const r of sel) {
    if (r.operator === 'notin' || r.operator === '!=' || r.operator === '!') {
      const had = absentOk.get(r.key);
      absentOk.set(r.key, had === undefined ? r : Array.isArray(had) ? [...had, r] : [had, r]);
    } else {
      needsKey.push(r);
    }
  }
  return { needsKey, absentOk };
}

function satisfies(r: LabelRequirement, val: string | undefined): boolean {
  switch (r.operator) {
    case 'in': case '=': case '==':
      return val !== undefined && hasValue(r, val);
    case 'notin': case '!=':
      return val === undefined || !hasValue(r, val);
    case 'exists':
      return val !== undefined;
    case '!':
      return val === undefined;
    case 'gt': case 'lt': {
      if (val === undefined || r.values.length !== 1) return false;
      const lv = parseInt64(val);
      const rv = parseInt64(r.values[0]);
      if (lv === undefined || rv === undefined) return false;
      return r.operator === 'gt' ? lv > rv : lv < rv;
    }
    default:
      return false;
  }
}

function requirementToString(r: LabelRequirement): string {
  let s = r.operator === '!' ? `!${r.key}` : r.key;
  switch (r.operator) {
    case 'exists': case '!': return s;
    case '=': case '==': case '!=': s += r.operator; break;
    case 'in': s += ' in '; break;
    case 'notin': s += ' notin '; break;
    case 'gt': s += '>'; break;
    case 'lt': s += '<'; break;
  }
  const vals = r.values.length === 1 ? r.values[0] : [...r.values].sort(compareBytes).join(',');
  return r.operator === 'in' || r.operator === 'notin' ? `${s}(${vals})` : s + vals;
}

/** Selector.String() as upstream prints it (e.g. in a List's metadata or a watch log). */
export function labelSelectorToString(sel: LabelSelector): string {
  return sel.map(requirementToString).join(',');
}

// ---------------------------------------------------------------------------------------------
// Label key / value validation (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------------

/** field.Invalid(path, key, ...).Error() for a bad label key, or undefined when the key is fine. */
function validateLabelKey(k: string, path: string): string | undefined {
  const errs = isQualifiedName(k);
  return errs.length ? `${path}: Invalid value: ${goQuote(k)}: ${errs.join('; ')}` : undefined;
}
