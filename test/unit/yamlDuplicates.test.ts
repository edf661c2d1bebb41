// Repeated YAML keys as sigs.k8s.io/yaml v1.4.0's UnmarshalStrict reports them: each expected text below
// is what that Go function returned for the document (minus its "error converting YAML to JSON: "),
// run once by hand; '' is no error. Lines are where the repeated key's value (or its anchor/tag)
// starts; keys are goyaml's resolved values as %#v prints them (YAML 1.1 bools, ints, uint64 in hex).
// The YAML codec's worker runs the same function: the last test goes through it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as YAML from 'yaml';
import { findDuplicateKeys, yamlUnmarshalErrors } from '../../src/apimachinery/yamlDuplicates.js';
import { YamlCodec } from '../../src/apimachinery/yamlCodec.js';
import { strictDecodingWarnings } from '../../src/apimachinery/fieldValidation.js';

const fromGo: [string, string][] = [
  ["a: 1\na: 2\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["a:\nb: 1\na:\n\nc: 2\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["a: &x 1\na: !!int 2\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["a: 1\na:\n  &y\n  k: 1\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["x: {a: 1,\n  a: 2}\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["x: [{a: 1, a: 2}]\n", "yaml: unmarshal errors:\n  line 1: key \"a\" already set in map"],
  ["l:\n- a: 1\n  a: 2\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["{\"a\": 1,\n \"b\": {\"c\": 1, \"c\": 2},\n \"a\": 3}", "yaml: unmarshal errors:\n  line 2: key \"c\" already set in map\n  line 3: key \"a\" already set in map"],
  ["b: &b {k: 1, k: 2}\nc: *b\nd: *b\n", "yaml: unmarshal errors:\n  line 1: key \"k\" already set in map\n  line 1: key \"k\" already set in map\n  line 1: key \"k\" already set in map"],
  ["b: &b {k: 1}\nc:\n  <<: *b\n  k: 2\n", "yaml: unmarshal errors:\n  line 4: key \"k\" already set in map"],
  ["c:\n  k: 2\n  <<: {k: 1}\n", "yaml: unmarshal errors:\n  line 3: key \"k\" already set in map"],
  ["m:\n  <<: [{a: 1}, {a: 2}]\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["---\na: 1\na: |\n  text\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["1: a\n\"1\": b\n", ""],
  ["1: a\n1.0: b\n1.00: c\n", "yaml: unmarshal errors:\n  line 3: key 1 already set in map"],
  ["yes: a\ntrue: b\non: c\n", "yaml: unmarshal errors:\n  line 2: key true already set in map\n  line 3: key true already set in map"],
  ["null: 1\n~: 2\n", "yaml: unmarshal errors:\n  line 2: key <nil> already set in map"],
  ["a: 1\n? a\n: 2\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["\"a\\u00e9\": 1\n\"aé\": 2\n\"\\x01\": 1\n\"\\x01\": 2\n", "yaml: unmarshal errors:\n  line 2: key \"aé\" already set in map\n  line 4: key \"\\x01\" already set in map"],
  ["1e6: a\n1e6: b\n", "yaml: unmarshal errors:\n  line 2: key 1e+06 already set in map"],
  ["1e20: a\n1e20: b\n0.00001: a\n0.00001: b\n0.0001: a\n0.0001: b\n", "yaml: unmarshal errors:\n  line 2: key 1e+20 already set in map\n  line 4: key 1e-05 already set in map\n  line 6: key 0.0001 already set in map"],
  [".inf: 1\n.Inf: 2\n-.inf: 1\n-.inf: 2\n.nan: 1\n.nan: 2\n", "yaml: unmarshal errors:\n  line 2: key +Inf already set in map\n  line 4: key -Inf already set in map"],
  ["18446744073709551615: 1\n18446744073709551615: 2\n", "yaml: unmarshal errors:\n  line 2: key 0xffffffffffffffff already set in map"],
  ["-0.0: 1\n0.0: 2\n", "yaml: unmarshal errors:\n  line 2: key 0 already set in map"],
  ["2001-12-14: 1\n\"2001-12-14\": 2\n", "yaml: unmarshal errors:\n  line 2: key \"2001-12-14\" already set in map"],
  ["0b11: 1\n3: 2\n0x3: 1\n03: 1\n0o3: 1\n1_0: 1\n10: 1\n", "yaml: unmarshal errors:\n  line 2: key 3 already set in map\n  line 3: key 3 already set in map\n  line 4: key 3 already set in map\n  line 5: key 3 already set in map\n  line 7: key 10 already set in map"],
  ["a: 1\n!!str a: 2\n!!int 3: 1\n\"3\": 2\n3: 3\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map\n  line 5: key 3 already set in map"],
  ["a: 1\na: # c\n  &z # d\n  - 1\n", "yaml: unmarshal errors:\n  line 3: key \"a\" already set in map"],
  ["a: 1\r\na: 2\r\nb:\r\n  c: 1\r\n  c: 2\r\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map\n  line 5: key \"c\" already set in map"],
  ["a: 1\na: \n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["a: 1\na: # c\nb: 2\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["'a': 1\na: 2\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["a: 1\na: >\n  folded\n", "yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"],
  ["a: 1\nb: 2\n", ""],
];

const strictError = (text: string) => {
  const dups = findDuplicateKeys(text, YAML);
  return dups.length ? yamlUnmarshalErrors(dups) : '';
};

describe('repeated YAML keys', () => {
  it('are found as goyaml.v2 finds them: order, lines, keys as Go prints them', () => {
    for (const [text, expected] of fromGo) assert.equal(strictError(text), expected, JSON.stringify(text));
  });

  it('become one warning a line (rest.go parseYAMLWarnings), with or without the converter\'s prefix', () => {
    const err = 'yaml: unmarshal errors:\n  line 2: key "a" already set in map\n  line 4: key "b" already set in map';
    const lines = ['line 2: key "a" already set in map', 'line 4: key "b" already set in map'];
    assert.deepEqual(strictDecodingWarnings(err), lines);
    assert.deepEqual(strictDecodingWarnings(`error converting YAML to JSON: ${err}`), lines);
    assert.deepEqual(strictDecodingWarnings('duplicate field "spec.weight"'), ['duplicate field "spec.weight"']);
  });

  it('are reported by the codec\'s worker, which keeps the last value', async () => {
    const codec = new YamlCodec({ maxJsonBytes: 1 << 20, timeoutMs: 10_000 });
    try {
      const d = await codec.decode('spec:\n  weight: 1\n  weight: 2\nm:\n  <<: {a: 1}\n  a: 3\n');
      assert.deepEqual(d.value, { spec: { weight: 2 }, m: { a: 3 } });
      assert.deepEqual(d.duplicateFields, ['yaml: unmarshal errors:\n  line 3: key "weight" already set in map\n  line 6: key "a" already set in map']);
      assert.deepEqual((await codec.decode('a: 1\nb: 2\n')).duplicateFields, []);
    } finally {
      codec.close();
    }
  });
});
