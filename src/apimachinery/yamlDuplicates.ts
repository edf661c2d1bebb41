// Repeated keys of a YAML document as kube finds them: sigs.k8s.io/yaml's UnmarshalStrict (goyaml.v2
// decoder.setMapIndex in strict mode) reports `line N: key K already set in map` for each, N the line
// where the repeated key's value starts, K the key as Go's %#v prints the value goyaml resolved it to.
// findDuplicateKeys runs in the YAML worker (yamlCodec.ts passes it its source): it must not use
// anything from outside its own body; the `yaml` package comes in as an argument.
import type * as YamlModule from 'yaml';
import { goQuote } from './goCompat.js';

/** A map key as goyaml.v2 resolves it into interface{} (resolve.go); ints beyond int64 are uint64. */
export type GoKey =
  | { kind: 'str'; value: string }
  | { kind: 'int' | 'uint'; value: string }
  | { kind: 'float'; value: number }
  | { kind: 'bool'; value: boolean }
  | { kind: 'null'; value: null };

export interface DuplicateKey { line: number; key: GoKey }

/**
 * goyaml.v2's order: a pair's value is decoded first (its own findings come first), then its key is
 * found already set. Merge keys (`<<`) add the merged mapping's keys to the same map, as goyaml does,
 * so a merged key that is set again is a finding too. A value reached through an alias is decoded
 * (and reported) again at each alias. At most `limit` findings.
 */
export function findDuplicateKeys(text: string, yaml: typeof YamlModule, limit = 1000): DuplicateKey[] {
  const doc = yaml.parseDocument(text, { uniqueKeys: false, schema: 'failsafe', merge: false, strict: false, prettyErrors: false });
  const out: DuplicateKey[] = [];
  if (doc.errors.length) return out;
  // goyaml counts \r\n, \r, \n, NEL, LS and PS as line breaks (yaml_private.go is_break).
  const lineStarts: number[] = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 0x85 || c === 0x2028 || c === 0x2029 || (c === 13 && text.charCodeAt(i + 1) !== 10)) lineStarts.push(i + 1);
  }
  const lineOf = (offset: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  // The node's line is where its anchor or tag starts, if it has one, else its content (parserc.go).
  const valueStart = (pair: YamlModule.Pair<YamlModule.Node, YamlModule.Node | null>): number => {
    const keyEnd = pair.key?.range?.[1] ?? 0;
    const content = pair.value?.range?.[0] ?? keyEnd;
    for (let i = keyEnd; i < content; i++) {
      const ch = text[i];
      if (ch === '#') while (i < content && text[i] !== '\n' && text[i] !== '\r') i++;
      else if (ch === '&' || ch === '!') return i;
    }
    return content;
  };
  // resolve.go's resolveMap: the plain scalars that are not strings whatever follows.
  const named = new Map<string, GoKey>();
  for (const w of ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']) named.set(w, { kind: 'bool', value: true });
  for (const w of ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']) named.set(w, { kind: 'bool', value: false });
  for (const w of ['', '~', 'null', 'Null', 'NULL']) named.set(w, { kind: 'null', value: null });
  for (const w of ['.nan', '.NaN', '.NAN']) named.set(w, { kind: 'float', value: NaN });
  for (const w of ['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF']) named.set(w, { kind: 'float', value: Infinity });
  for (const w of ['-.inf', '-.Inf', '-.INF']) named.set(w, { kind: 'float', value: -Infinity });
  const deref = (node: unknown): unknown => (yaml.isAlias(node) ? node.resolve(doc) : node);
  const goKey = (node: unknown): GoKey | undefined => {
    const n = deref(node);
    if (!yaml.isScalar(n)) return undefined; // a collection key is goyaml's own error, not a finding
    const s = String(n.value);
    const tag = n.tag?.replace('tag:yaml.org,2002:', '!!');
    const quoted = n.type !== undefined && n.type !== 'PLAIN';
    if (tag === '!!str' || tag === '!!binary' || (quoted && !tag) || (tag && !['!!null', '!!bool', '!!int', '!!float', '!!timestamp'].includes(tag))) {
      return { kind: 'str', value: s };
    }
    const known = named.get(s);
    if (known) return known;
    if (s[0] === '.' && /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(s)) return { kind: 'float', value: Number(s) };
    if (!/^[-+0-9]/.test(s)) return { kind: 'str', value: s };
    // strconv.ParseInt(plain, 0, 64), then ParseUint, then a YAML-style float.
    const plain = s.replace(/_/g, '');
    const m = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(plain);
    if (m) {
      const digits = m[2];
      const magnitude = /^0[0-7]+$/.test(digits) ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
      const v = m[1] === '-' ? -magnitude : magnitude;
      if (v >= -(2n ** 63n) && v < 2n ** 63n) return { kind: 'int', value: v.toString() };
      if (v >= 0n && v < 2n ** 64n) return { kind: 'uint', value: v.toString() };
    }
    if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(plain)) return { kind: 'float', value: Number(plain) };
    return { kind: 'str', value: s };
  };
  const identity = (k: GoKey): string | undefined => (k.kind === 'float' && Number.isNaN(k.value) ? undefined : `${k.kind === 'uint' ? 'int' : k.kind}:${String(k.value)}`);
  const isMergeKey = (node: unknown): boolean => yaml.isScalar(node) && node.value === '<<' && (node.type === 'PLAIN' || node.tag === 'tag:yaml.org,2002:merge');

  const decode = (node: unknown): void => {
    if (out.length >= limit) return;
    const n = deref(node);
    if (yaml.isMap(n)) mapping(n, new Set());
    else if (yaml.isSeq(n)) for (const item of n.items) decode(item);
  };
  const mapping = (m: YamlModule.YAMLMap, keys: Set<string>): void => {
    for (const pair of m.items as YamlModule.Pair<YamlModule.Node, YamlModule.Node | null>[]) {
      if (out.length >= limit) return;
      if (isMergeKey(pair.key)) {
        const merged = deref(pair.value);
        if (yaml.isMap(merged)) mapping(merged, keys);
        // A sequence of mappings: later ones first, so that earlier ones take precedence (decoder.merge).
        else if (yaml.isSeq(merged)) for (const item of [...merged.items].reverse()) { const im = deref(item); if (yaml.isMap(im)) mapping(im, keys); }
        continue;
      }
      const key = goKey(pair.key);
      decode(pair.value);
      const id = key && identity(key);
      if (key === undefined || id === undefined) continue;
      if (keys.has(id)) out.push({ line: lineOf(valueStart(pair)), key });
      else keys.add(id);
    }
  };
  decode(doc.contents);
  return out;
}

/** Go's %#v of the key: strings quoted, uint64 in hex, floats as %g's shortest form. */
export function goKeyText(key: GoKey): string {
  switch (key.kind) {
    case 'str': return goQuote(key.value);
    case 'int': return key.value;
    case 'uint': return `0x${BigInt(key.value).toString(16)}`;
    case 'bool': return String(key.value);
    case 'null': return '<nil>';
    case 'float': return goFloat(key.value);
  }
}

/** strconv.FormatFloat(v, 'g', -1, 64): exponent form below 1e-4 and from 1e6 (shortest digits). */
function goFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const [mantissa, e] = v.toExponential().split('e');
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return String(v);
  return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
}

/** yaml.YAMLToJSONStrict's error for the findings (goyaml's TypeError: one line each). */
export function yamlUnmarshalErrors(duplicates: readonly DuplicateKey[]): string {
  return `yaml: unmarshal errors:\n  ${duplicates.map((d) => `line ${d.line}: key ${goKeyText(d.key)} already set in map`).join('\n  ')}`;
}
