// Expected strings and messages below were produced by k8s.io/apimachinery v0.33.13 itself
// (labels.Parse / fields.ParseSelector + the custom-resource ConvertFieldLabel).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  escapeFieldValue, fieldSelectorSingleValue, fieldSelectorToString, matchesFields, parseFieldSelector,
  unescapeFieldValue, type FieldSelector,
} from '../../src/apimachinery/fields.js';
import { labelSelectorToString, matchesLabels, parseLabelSelector } from '../../src/apimachinery/labels.js';
import { ApiError } from '../../src/apimachinery/status.js';

/** Asserts fn throws an ApiError 400 BadRequest with exactly this message. */
function throws400(fn: () => unknown, message: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
    assert.equal(e.code, 400);
    assert.equal(e.reason, 'BadRequest');
    assert.equal(e.message, message);
    return true;
  });
}

const labelValueErr = (v: string, key = 'a', i = 0) =>
  `values[${i}][${key}]: Invalid value: "${v}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`;

describe('parseLabelSelector: operators', () => {
  const cases: [string, string, { key: string; operator: string; values: string[] }[]][] = [
    ['a', 'a', [{ key: 'a', operator: 'exists', values: [] }]],
    ['!a', '!a', [{ key: 'a', operator: '!', values: [] }]],
    ['a=b', 'a=b', [{ key: 'a', operator: '=', values: ['b'] }]],
    ['a==b', 'a==b', [{ key: 'a', operator: '==', values: ['b'] }]],
    ['a!=b', 'a!=b', [{ key: 'a', operator: '!=', values: ['b'] }]],
    ['a in (b,c)', 'a in (b,c)', [{ key: 'a', operator: 'in', values: ['b', 'c'] }]],
    ['a notin (c,b)', 'a notin (b,c)', [{ key: 'a', operator: 'notin', values: ['b', 'c'] }]],
    ['a>5', 'a>5', [{ key: 'a', operator: 'gt', values: ['5'] }]],
    ['a<5', 'a<5', [{ key: 'a', operator: 'lt', values: ['5'] }]],
    ['a=', 'a=', [{ key: 'a', operator: '=', values: [''] }]],
    ['a==', 'a==', [{ key: 'a', operator: '==', values: [''] }]],
    ['a in ()', 'a in ()', [{ key: 'a', operator: 'in', values: [''] }]],
    ['a in (,)', 'a in ()', [{ key: 'a', operator: 'in', values: [''] }]],
    ['a in (b,,c)', 'a in (,b,c)', [{ key: 'a', operator: 'in', values: ['', 'b', 'c'] }]],
    ['x in (b,a,b)', 'x in (a,b)', [{ key: 'x', operator: 'in', values: ['a', 'b'] }]],
    ['in in (in)', 'in in (in)', [{ key: 'in', operator: 'in', values: ['in'] }]],
    ['example.com/tier=web', 'example.com/tier=web', [{ key: 'example.com/tier', operator: '=', values: ['web'] }]],
  ];
  for (const [input, str, reqs] of cases) {
    it(`parses ${JSON.stringify(input)}`, () => {
      const sel = parseLabelSelector(input);
      assert.deepEqual(sel, reqs);
      assert.equal(labelSelectorToString(sel), str);
    });
  }

  it('ANDs comma-separated requirements, sorted by key, tolerating whitespace', () => {
    const sel = parseLabelSelector(' a = b , c in ( e , d ) ');
    assert.equal(labelSelectorToString(sel), 'a=b,c in (d,e)');
    assert.equal(labelSelectorToString(parseLabelSelector('z,a,m=1')), 'a,m=1,z');
    assert.equal(labelSelectorToString(parseLabelSelector('a=b,a!=c')), 'a=b,a!=c');
    assert.equal(labelSelectorToString(parseLabelSelector('a=b\t,\nc')), 'a=b,c');
  });

  it('an empty or blank selector has no requirements', () => {
    assert.deepEqual(parseLabelSelector(''), []);
    assert.deepEqual(parseLabelSelector('  \t'), []);
  });

  it('accepts 63-character names and DNS-subdomain prefixes', () => {
    const k = 'x'.repeat(63);
    assert.equal(labelSelectorToString(parseLabelSelector(`${k}=${k}`)), `${k}=${k}`);
    assert.equal(parseLabelSelector('a.b-c.example/K_1.x=V-1_.z')[0].key, 'a.b-c.example/K_1.x');
  });
});

describe('parseLabelSelector: malformed input is a 400 with upstream\'s message', () => {
  const cases: [string, string][] = [
    [',', "found ',', expected: !, identifier, or 'end of string'"],
    ['a,', "found '', expected: identifier after ','"],
    ['a,,b', "found ',', expected: identifier after ','"],
    ['a b', 'unable to parse requirement: found \'b\', expected: in, notin, =, ==, !=, gt, lt'],
    ['a !', 'unable to parse requirement: found \'!\', expected: in, notin, =, ==, !=, gt, lt'],
    ['a=(b)', "unable to parse requirement: found '(', expected: identifier"],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a in (', "unable to parse requirement: found '', expected: ',', ')' or identifier"],
    ['a in (b c)', "unable to parse requirement: found 'c', expected: ',' or ')'"],
    ['a=b)', "found ')', expected: ',' or 'end of string'"],
    ['a===b', "unable to parse requirement: found '=', expected: identifier"],
    ['!a=b', "found '=', expected: ',' or 'end of string'"],
    ['!', "unable to parse requirement: found '', expected: identifier"],
    ['!!a', "unable to parse requirement: found '!', expected: identifier"],
    ['a=!', "unable to parse requirement: found '!', expected: identifier"],
    ['a>x', `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`],
    ['a>99999999999999999999', `unable to parse requirement: values[0]: Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer`],
    ['a>-5', `unable to parse requirement: ${labelValueErr('-5')}`],
    ['a=-b', `unable to parse requirement: ${labelValueErr('-b')}`],
    ['a=é', `unable to parse requirement: ${labelValueErr('é')}`],
    ['a in (-x, y-)', `unable to parse requirement: [${labelValueErr('-x')}, ${labelValueErr('y-', 'a', 1)}]`],
    ['/b', 'unable to parse requirement: <nil>: Invalid value: "/b": prefix part must be non-empty'],
    ['A_/b', `unable to parse requirement: <nil>: Invalid value: "A_/b": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`],
    ['a/b/c', `unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`],
    ['x'.repeat(64), `unable to parse requirement: <nil>: Invalid value: "${'x'.repeat(64)}": name part must be no more than 63 characters`],
    [`a=${'v'.repeat(64)}`, `unable to parse requirement: values[0][a]: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`],
    ['"a"', `unable to parse requirement: <nil>: Invalid value: "\\"a\\"": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`],
    ['a=\u00a0', `unable to parse requirement: ${labelValueErr('\\u00a0')}`],
  ];
  for (const [input, message] of cases) {
    it(`rejects ${JSON.stringify(input)}`, () => throws400(() => parseLabelSelector(input), message));
  }
});

describe('matchesLabels', () => {
  const m = (sel: string, labels: Record<string, string> | undefined) => matchesLabels(parseLabelSelector(sel), labels);

  it('an empty selector matches everything, even no labels', () => {
    assert.equal(m('', undefined), true);
    assert.equal(m('', {}), true);
    assert.equal(m('', { a: 'b' }), true);
  });

  it('= and == need the key with that value', () => {
    for (const op of ['=', '==']) {
      assert.equal(m(`a${op}b`, { a: 'b' }), true);
      assert.equal(m(`a${op}b`, { a: 'c' }), false);
      assert.equal(m(`a${op}b`, {}), false);
      assert.equal(m(`a${op}b`, undefined), false);
    }
    assert.equal(m('a=', { a: '' }), true);
    assert.equal(m('a=', {}), false);
  });

  it('!= and notin also match a missing key', () => {
    assert.equal(m('a!=b', { a: 'b' }), false);
    assert.equal(m('a!=b', { a: 'c' }), true);
    assert.equal(m('a!=b', {}), true);
    assert.equal(m('a notin (b,c)', { a: 'c' }), false);
    assert.equal(m('a notin (b,c)', { a: 'd' }), true);
    assert.equal(m('a notin (b,c)', undefined), true);
  });

  it('in needs one of the values', () => {
    assert.equal(m('a in (b,c)', { a: 'c' }), true);
    assert.equal(m('a in (b,c)', { a: 'd' }), false);
    assert.equal(m('a in (b,c)', {}), false);
    assert.equal(m('a in ()', { a: '' }), true);
  });

  it('exists and !key', () => {
    assert.equal(m('a', { a: '' }), true);
    assert.equal(m('a', { b: 'x' }), false);
    assert.equal(m('!a', { b: 'x' }), true);
    assert.equal(m('!a', { a: 'x' }), false);
    assert.equal(m('!a', undefined), true);
  });

  it('gt / lt compare as 64-bit integers; a missing or non-integer label does not match', () => {
    assert.equal(m('a>5', { a: '6' }), true);
    assert.equal(m('a>5', { a: '5' }), false);
    assert.equal(m('a>5', { a: '-6' }), false);
    assert.equal(m('a>5', { a: 'x' }), false);
    assert.equal(m('a>5', {}), false);
    assert.equal(m('a<5', { a: '4' }), true);
    assert.equal(m('a<5', { a: '5' }), false);
    assert.equal(m('a<5', { a: '-9223372036854775808' }), true);
    assert.equal(m('a>9223372036854775806', { a: '9223372036854775807' }), true); // beyond float precision
    assert.equal(m('a<9223372036854775807', { a: '9223372036854775808' }), false); // out of int64 range
    assert.equal(m('a>007', { a: '8' }), true);
  });

  it('requirements are ANDed', () => {
    assert.equal(m('a=b,c', { a: 'b', c: '' }), true);
    assert.equal(m('a=b,c', { a: 'b' }), false);
    assert.equal(m('a=b,a!=c', { a: 'b' }), true);
  });

  it('inherited properties are not labels', () => {
    assert.equal(m('constructor', {}), false);
    assert.equal(m('!toString', {}), true);
    assert.equal(m('hasOwnProperty=x', { hasOwnProperty: 'x' }), true);
    assert.throws(() => m('__proto__', {}), ApiError); // not a valid label key anyway
  });
});

describe('parseFieldSelector', () => {
  const supported = ['metadata.name', 'metadata.namespace'];
  const ok: [string, string, string | undefined][] = [
    ['metadata.name=x', 'metadata.name=x', 'x'],
    ['metadata.name==x', 'metadata.name=x', 'x'],
    ['metadata.name!=x', 'metadata.name!=x', undefined],
    ['metadata.name=', 'metadata.name=', ''],
    ['metadata.namespace=ns,metadata.name=x', 'metadata.name=x,metadata.namespace=ns', 'x'],
    ['metadata.name=a\\,b', 'metadata.name=a\\,b', 'a,b'],
    ['metadata.name=a\\=b', 'metadata.name=a\\=b', 'a=b'],
    ['metadata.name=a\\\\b', 'metadata.name=a\\\\b', 'a\\b'],
    [',,metadata.name=x,', 'metadata.name=x', 'x'],
    ['', '', undefined],
    ['=', '', undefined],
  ];
  for (const [input, str, name] of ok) {
    it(`parses ${JSON.stringify(input)}`, () => {
      const sel = parseFieldSelector(input, supported);
      assert.equal(fieldSelectorToString(sel), str);
      assert.equal(fieldSelectorSingleValue(sel, 'metadata.name'), name);
    });
  }

  it('keeps requirements as field/operator/unescaped value', () => {
    assert.deepEqual(parseFieldSelector('metadata.name!=a\\,b,metadata.namespace==n', supported), [
      { field: 'metadata.name', operator: '!=', value: 'a,b' },
      { field: 'metadata.namespace', operator: '=', value: 'n' },
    ]);
  });

  const bad: [string, string][] = [
    ['metadata.name', "invalid selector: 'metadata.name'; can't understand 'metadata.name'"],
    ['bad,metadata.name=x', "invalid selector: 'bad,metadata.name=x'; can't understand 'bad'"],
    ['metadata.name=a,b', "invalid selector: 'metadata.name=a,b'; can't understand 'b'"],
    ['metadata.name=a\\b', 'invalid field selector: invalid escape sequence: \\b'],
    ['metadata.name=a\\', 'invalid field selector: invalid escape sequence: \\'],
    ['metadata.name=a=b', 'invalid field selector: unescaped character in value: 61'],
    ['spec.unknown=1', 'field label not supported: spec.unknown'],
    [' metadata.name=x', 'field label not supported:  metadata.name'],
    ['=x', 'field label not supported: '],
    // every term is parsed before any field is checked
    ['metadata.name=x,zzz=1,bogus', "invalid selector: 'metadata.name=x,zzz=1,bogus'; can't understand 'bogus'"],
    // terms are checked in sorted order
    ['zzz=1,aaa=2', 'field label not supported: aaa'],
  ];
  for (const [input, message] of bad) {
    it(`rejects ${JSON.stringify(input)}`, () => throws400(() => parseFieldSelector(input, supported), message));
  }

  it('a field is supported only if listed', () => {
    throws400(() => parseFieldSelector('metadata.namespace=x', ['metadata.name']), 'field label not supported: metadata.namespace');
    assert.equal(parseFieldSelector('spec.color=red', ['spec.color']).length, 1);
  });
});

describe('matchesFields / fieldSelectorSingleValue', () => {
  const obj: Record<string, string> = { 'metadata.name': 'a,b', 'metadata.namespace': 'ns' };
  const get = (f: string) => obj[f];
  const sel = (s: string): FieldSelector => parseFieldSelector(s, ['metadata.name', 'metadata.namespace', 'spec.color']);

  it('= / == / != on values, with escapes', () => {
    assert.equal(matchesFields(sel('metadata.name=a\\,b'), get), true);
    assert.equal(matchesFields(sel('metadata.name==a\\,b'), get), true);
    assert.equal(matchesFields(sel('metadata.name=a'), get), false);
    assert.equal(matchesFields(sel('metadata.name!=a'), get), true);
    assert.equal(matchesFields(sel('metadata.name!=a\\,b'), get), false);
  });

  it('ANDs terms; an empty selector matches everything', () => {
    assert.equal(matchesFields(sel('metadata.name=a\\,b,metadata.namespace=ns'), get), true);
    assert.equal(matchesFields(sel('metadata.name=a\\,b,metadata.namespace=other'), get), false);
    assert.equal(matchesFields(sel(''), get), true);
  });

  it('a missing field reads as the empty string', () => {
    assert.equal(matchesFields(sel('spec.color='), get), true);
    assert.equal(matchesFields(sel('spec.color!='), get), false);
    assert.equal(matchesFields(sel('spec.color=red'), get), false);
  });

  it('fieldSelectorSingleValue is the first = requirement on the field (sorted order)', () => {
    assert.equal(fieldSelectorSingleValue(sel('metadata.name=b,metadata.name=a'), 'metadata.name'), 'a');
    assert.equal(fieldSelectorSingleValue(sel('metadata.name!=a,metadata.name=b'), 'metadata.name'), 'b');
    assert.equal(fieldSelectorSingleValue(sel('metadata.name!=a'), 'metadata.name'), undefined);
    assert.equal(fieldSelectorSingleValue(sel('metadata.namespace=x'), 'metadata.name'), undefined);
  });
});

describe('field value escaping', () => {
  it('escapes and unescapes \\ , and =', () => {
    assert.equal(escapeFieldValue('a\\b,c=d'), 'a\\\\b\\,c\\=d');
    assert.equal(unescapeFieldValue('a\\\\b\\,c\\=d'), 'a\\b,c=d');
    for (const v of ['', 'plain', '\\', ',,', '==', 'a\\,=b', 'ü\\']) assert.equal(unescapeFieldValue(escapeFieldValue(v)), v);
  });

  it('rejects bad sequences with a 400', () => {
    throws400(() => unescapeFieldValue('a\\x'), 'invalid field selector: invalid escape sequence: \\x');
    throws400(() => unescapeFieldValue('a,'), 'invalid field selector: unescaped character in value: 44');
  });
});

describe('matchesLabels on long selectors (indexed by key) agrees with checking every requirement', () => {
  it('for 2,000 random selectors of 16-60 requirements against random label sets', () => {
    let seed = 42;
    // An LCG's low bits repeat quickly: use its high bits.
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor(seed / 65536) % n; };
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const vals = ['1', '2', '3', 'x'];
    const pick = <T>(xs: T[]) => xs[rand(xs.length)];
    const outcomes = { true: 0, false: 0 };
    for (let n = 0; n < 2000; n++) {
      const labels: Record<string, string> = {};
      for (let i = 0; i < 3; i++) labels[pick(keys)] = pick(vals);
      const present = Object.keys(labels);
      // Mostly requirements a missing label satisfies, so that they decide many outcomes; now and
      // then one that needs a label, on a key the object may have.
      const terms: string[] = [];
      for (let i = 16 + rand(45); i > 0; i--) {
        const k = pick(keys);
        terms.push(pick([`${k}!=${pick(vals)}`, `${k} notin (${pick(vals)},${pick(vals)})`, `!${k}`, `${k}!=${pick(vals)}`]));
      }
      if (rand(2)) {
        const k = pick(present);
        terms.push(pick([`${k}=${pick(vals)}`, `${k} in (${pick(vals)},${pick(vals)})`, k, `${k}>${rand(4)}`]));
      }
      const sel = parseLabelSelector(terms.join(','));
      // The reference: each requirement checked on its own.
      const reference = sel.every((r) => matchesLabels([r], labels));
      assert.equal(matchesLabels(sel, labels), reference, `${terms.join(',')} on ${JSON.stringify(labels)}`);
      outcomes[String(reference) as 'true' | 'false']++;
    }
    assert.ok(outcomes.true > 100 && outcomes.false > 100, `both outcomes exercised: ${JSON.stringify(outcomes)}`);
  });
});
