// End-to-end: the REAL server (src/main.ts, standalone) as a child process, driven by the REAL kubectl
// (/usr/bin/kubectl, 1.32) with an isolated HOME and --kubeconfig <tmp>/certs/kubeconfig.
// Each test uses its own namespace (standalone mode has no Namespace objects; any name works) and
// asserts on kubectl's actual output. The last test SIGTERMs the server with a watch open.
import assert from 'node:assert/strict';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { generate } from 'selfsigned';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';
import { VERSION } from '../../src/version.js';
import { startFarmServer, type FarmServer, type KubectlResult } from '../helpers/kubectl.js';

let srv: FarmServer;
const k = (args: string[], opts?: Parameters<FarmServer['kubectl']>[1]) => srv.kubectl(args, opts);

interface LlamaOpts {
  ns?: string; weight?: number; height?: number; color?: string; food?: string;
  labels?: Record<string, string>; spec?: Record<string, unknown>; resourceVersion?: string;
}

function llama(name: string, o: LlamaOpts = {}): Record<string, unknown> {
  const spec: Record<string, unknown> = o.spec ?? { weight: o.weight ?? 100, height: o.height ?? 1.6 };
  if (!o.spec) {
    if (o.color) spec.color = o.color;
    if (o.food) spec.favoriteFood = o.food;
  }
  return {
    apiVersion: 'farm.example.com/v1alpha',
    kind: 'Llama',
    metadata: {
      name,
      ...(o.ns ? { namespace: o.ns } : {}),
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.resourceVersion ? { resourceVersion: o.resourceVersion } : {}),
    },
    spec,
  };
}

const yamlOf = (...objs: Record<string, unknown>[]) => objs.map((o) => stringify(o)).join('---\n');

function explain(r: KubectlResult): string {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
}

/** Asserts exit 0 and returns stdout. */
async function ok(args: string[], opts?: Parameters<FarmServer['kubectl']>[1]): Promise<string> {
  const r = await k(args, opts);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed:\n${explain(r)}`);
  return r.stdout;
}

/** Asserts a non-zero exit and returns stderr. */
async function fails(args: string[], opts?: Parameters<FarmServer['kubectl']>[1]): Promise<string> {
  const r = await k(args, opts);
  assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed:\n${explain(r)}`);
  return r.stderr;
}

async function create(ns: string, ...objs: Record<string, unknown>[]): Promise<void> {
  const out = await ok(['create', '-n', ns, '-f', '-'], { input: yamlOf(...objs) });
  for (const o of objs) assert.match(out, new RegExp(`llama\\.farm\\.example\\.com/${(o.metadata as { name: string }).name} created`));
}

async function getJson(ns: string, name: string): Promise<any> {
  return JSON.parse(await ok(['get', 'llama', name, '-n', ns, '-o', 'json']));
}

/** Parses kubectl's column output using the header's column offsets (cells may be empty). */
function table(out: string): Record<string, string>[] {
  const lines = out.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const header = lines[0]!;
  const cols: { name: string; start: number }[] = [];
  const re = /\S+/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(header))) cols.push({ name: m[0], start: m.index });
  return lines.slice(1).map((line) => {
    const row: Record<string, string> = {};
    cols.forEach((c, i) => { row[c.name] = line.slice(c.start, i + 1 < cols.length ? cols[i + 1]!.start : undefined).trim(); });
    return row;
  });
}

const headerOf = (out: string) => (out.split('\n')[0] ?? '').trim().split(/\s+/);
const names = (out: string) => table(out).map((r) => r.NAME);

before(async () => {
  srv = await startFarmServer();
});

after(async () => {
  await srv?.cleanup();
});

describe('kubectl against the standalone server', () => {
  test('kubectl version shows the Server Version', async () => {
    const out = await ok(['version']);
    assert.match(out, /Client Version: v1\.\d+/);
    assert.match(out, new RegExp(`Server Version: ${VERSION.replace(/\./g, '\\.')}\\b`));
    const json = JSON.parse(await ok(['version', '-o', 'json']));
    assert.equal(json.serverVersion.gitVersion, VERSION);
  });

  test('api-resources lists llamas (shortname ll, namespaced, kind Llama)', async () => {
    const out = await ok(['api-resources']);
    assert.deepEqual(headerOf(out), ['NAME', 'SHORTNAMES', 'APIVERSION', 'NAMESPACED', 'KIND']);
    const row = table(out).find((r) => r.NAME === 'llamas');
    assert.ok(row, `no llamas row:\n${out}`);
    assert.deepEqual(row, { NAME: 'llamas', SHORTNAMES: 'll', APIVERSION: 'farm.example.com/v1alpha', NAMESPACED: 'true', KIND: 'Llama' });
    const grouped = await ok(['api-resources', '--api-group=farm.example.com', '-o', 'name']);
    assert.match(grouped, /^llamas\.farm\.example\.com$/m);
  });

  test('create -f - then get llamas / get ll / get llama X (default namespace from the kubeconfig)', async () => {
    const out = await ok(['create', '-f', '-'], { input: yamlOf(llama('dolly-default', { weight: 120, height: 1.7, color: 'brown', food: 'hay', labels: { app: 'farm' } })) });
    assert.equal(out.trim(), 'llama.farm.example.com/dolly-default created');

    const all = await ok(['get', 'llamas']);
    assert.deepEqual(headerOf(all), ['NAME', 'COLOR', 'WEIGHT', 'AGE']);
    const row = table(all).find((r) => r.NAME === 'dolly-default');
    assert.ok(row, all);
    assert.equal(row.COLOR, 'brown');
    assert.equal(row.WEIGHT, '120');
    assert.match(row.AGE!, /^\d+s$/);

    assert.ok(names(await ok(['get', 'll'])).includes('dolly-default'));
    const one = await ok(['get', 'llama', 'dolly-default']);
    assert.deepEqual(names(one), ['dolly-default']);
    const fq = await ok(['get', 'llamas.farm.example.com', 'dolly-default', '-n', 'default']);
    assert.deepEqual(names(fq), ['dolly-default']);

    const dup = await fails(['create', '-f', '-'], { input: yamlOf(llama('dolly-default', { weight: 1 })) });
    assert.match(dup, /Error from server \(AlreadyExists\): error when creating "STDIN": llamas\.farm\.example\.com "dolly-default" already exists/);
    assert.equal((await getJson('default', 'dolly-default')).spec.weight, 120);
  });

  test('get farm lists llamas through the "farm" category', async () => {
    const ns = 'cat-ns';
    await create(ns, llama('cat1', { weight: 80 }));
    const out = await ok(['get', 'farm', '-n', ns]);
    assert.deepEqual(headerOf(out), ['NAME', 'COLOR', 'WEIGHT', 'AGE']);
    assert.deepEqual(table(out).map((r) => [r.NAME, r.WEIGHT]), [['cat1', '80']]);
  });

  test('get llamas -A shows a NAMESPACE column', async () => {
    await create('all-a', llama('a1', { weight: 10 }));
    await create('all-b', llama('b1', { weight: 20 }));
    const out = await ok(['get', 'llamas', '-A']);
    assert.deepEqual(headerOf(out), ['NAMESPACE', 'NAME', 'COLOR', 'WEIGHT', 'AGE']);
    const rows = table(out);
    assert.ok(rows.some((r) => r.NAMESPACE === 'all-a' && r.NAME === 'a1' && r.WEIGHT === '10'), out);
    assert.ok(rows.some((r) => r.NAMESPACE === 'all-b' && r.NAME === 'b1' && r.WEIGHT === '20'), out);
  });

  test('-o wide adds the priority-1 columns (HEIGHT, FOOD)', async () => {
    const ns = 'wide-ns';
    await create(ns, llama('w1', { weight: 90, height: 1.8, food: 'carrots', color: 'grey' }), llama('w2', { weight: 70, height: 1.2 }));
    const narrow = await ok(['get', 'll', '-n', ns]);
    assert.ok(!headerOf(narrow).includes('HEIGHT'), narrow);
    const wide = await ok(['get', 'll', '-n', ns, '-o', 'wide']);
    assert.deepEqual(headerOf(wide), ['NAME', 'COLOR', 'WEIGHT', 'HEIGHT', 'FOOD', 'AGE']);
    const rows = table(wide);
    assert.deepEqual(rows.map(({ AGE: _age, ...r }) => r), [
      { NAME: 'w1', COLOR: 'grey', WEIGHT: '90', HEIGHT: '1.8', FOOD: 'carrots' },
      { NAME: 'w2', COLOR: 'white', WEIGHT: '70', HEIGHT: '1.2', FOOD: '' },
    ]);
  });

  test('-o yaml, -o json and -o name', async () => {
    const ns = 'out-ns';
    await create(ns, llama('o1', { weight: 55, height: 1.1, labels: { app: 'farm' } }), llama('o2', { weight: 56, height: 1.2 }));

    const single = parseYaml(await ok(['get', 'llama', 'o1', '-n', ns, '-o', 'yaml']));
    assert.equal(single.apiVersion, 'farm.example.com/v1alpha');
    assert.equal(single.kind, 'Llama');
    assert.equal(single.metadata.name, 'o1');
    assert.equal(single.metadata.namespace, ns);
    assert.deepEqual(single.metadata.labels, { app: 'farm' });
    assert.match(single.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(single.metadata.resourceVersion, /^\d+$/);
    assert.match(single.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(single.metadata.generation, 1);
    // Defaults are applied by the server.
    assert.deepEqual(single.spec, { weight: 55, height: 1.1, color: 'white', shorn: false });

    const list = JSON.parse(await ok(['get', 'llamas', '-n', ns, '-o', 'json']));
    assert.equal(list.kind, 'List');
    assert.deepEqual(list.items.map((i: any) => [i.kind, i.metadata.name, i.spec.weight]), [['Llama', 'o1', 55], ['Llama', 'o2', 56]]);

    const listYaml = parseYaml(await ok(['get', 'llamas', '-n', ns, '-o', 'yaml']));
    assert.deepEqual(listYaml.items.map((i: any) => i.metadata.name), ['o1', 'o2']);

    assert.equal(await ok(['get', 'llamas', '-n', ns, '-o', 'name']), 'llama.farm.example.com/o1\nllama.farm.example.com/o2\n');
    assert.equal(await ok(['get', 'llama', 'o2', '-n', ns, '-o', 'jsonpath={.spec.height}']), '1.2');
  });

  test('-l app=farm and --field-selector (metadata.name, spec.color)', async () => {
    const ns = 'sel-ns';
    await create(ns,
      llama('s1', { labels: { app: 'farm' }, color: 'black' }),
      llama('s2', { labels: { app: 'farm' }, color: 'brown' }),
      llama('s3', { labels: { app: 'zoo' }, color: 'black' }),
      llama('s4'));
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '-l', 'app=farm'])), ['s1', 's2']);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '-l', 'app!=farm'])), ['s3', 's4']);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '-l', 'app in (farm,zoo),app!=farm'])), ['s3']);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '--field-selector', 'metadata.name=s3'])), ['s3']);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '--field-selector', 'spec.color=black'])), ['s1', 's3']);
    assert.equal(await ok(['get', 'll', '-n', ns, '-l', 'app=farm', '--field-selector', 'metadata.name=s2', '-o', 'name']), 'llama.farm.example.com/s2\n');
    const none = await k(['get', 'll', '-n', ns, '-l', 'app=nothing']);
    assert.equal(none.code, 0, explain(none));
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /No resources found in sel-ns namespace\./);
    const badField = await fails(['get', 'll', '-n', ns, '--field-selector', 'spec.weight=3']);
    assert.match(badField, /BadRequest|field label not supported|not supported/i);
  });

  test('--chunk-size=2 over 5 llamas lists all 5 (3 paged requests with continue)', async () => {
    const ns = 'chunk-ns';
    await create(ns, ...[1, 2, 3, 4, 5].map((i) => llama(`c${i}`, { weight: i })));
    const r = await k(['get', 'll', '-n', ns, '--chunk-size=2', '--v=6']);
    assert.equal(r.code, 0, explain(r));
    assert.deepEqual(names(r.stdout), ['c1', 'c2', 'c3', 'c4', 'c5']);
    const gets = r.stderr.split('\n').filter((l) => /GET https:\S+\/namespaces\/chunk-ns\/llamas\?\S*limit=2/.test(l));
    assert.equal(gets.length, 3, `expected 3 paged requests:\n${gets.join('\n')}`);
    assert.equal(gets.filter((l) => /continue=/.test(l)).length, 2, gets.join('\n'));
    assert.ok(gets.every((l) => /200 OK/.test(l)), gets.join('\n'));
    assert.equal(await ok(['get', 'll', '-n', ns, '--chunk-size=2', '-o', 'name']),
      [1, 2, 3, 4, 5].map((i) => `llama.farm.example.com/c${i}\n`).join(''));
  });

  test('--show-labels adds a LABELS column', async () => {
    const ns = 'labels-ns';
    await create(ns, llama('sl1', { labels: { app: 'farm', tier: 'gold' } }), llama('sl2'));
    const out = await ok(['get', 'll', '-n', ns, '--show-labels']);
    assert.deepEqual(headerOf(out), ['NAME', 'COLOR', 'WEIGHT', 'AGE', 'LABELS']);
    assert.deepEqual(table(out).map((r) => [r.NAME, r.LABELS]), [['sl1', 'app=farm,tier=gold'], ['sl2', '<none>']]);
  });

  test('--sort-by=.spec.weight orders rows by weight', async () => {
    const ns = 'sort-ns';
    // Integers only: kubectl's sorter cannot compare an int64 with a float64 (a client-side limit).
    await create(ns, llama('heavy', { weight: 200 }), llama('light', { weight: 5 }), llama('mid', { weight: 60 }), llama('aaa', { weight: 100 }));
    const out = await ok(['get', 'll', '-n', ns, '--sort-by=.spec.weight']);
    assert.deepEqual(table(out).map((r) => [r.NAME, r.WEIGHT]), [['light', '5'], ['mid', '60'], ['aaa', '100'], ['heavy', '200']]);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '--sort-by=.metadata.name'])), ['aaa', 'heavy', 'light', 'mid']);
  });

  test('get -w sees a create, a modify and a delete made by other kubectl commands', async () => {
    const ns = 'watch-ns';
    const events = srv.spawnKubectl(['get', 'll', '-n', ns, '-w', '--output-watch-events']);
    const plain = srv.spawnKubectl(['get', 'll', '-n', ns, '-w']);
    try {
      await create(ns, llama('wa', { weight: 120, color: 'brown' }));
      await events.waitFor(/^ADDED\s+wa\s+brown\s+120\s/m, 15_000);
      await plain.waitFor(/^wa\s+brown\s+120\s/m, 15_000);
      assert.match(await ok(['patch', 'll', 'wa', '-n', ns, '--type', 'merge', '-p', '{"spec":{"weight":130}}']), /patched/);
      await events.waitFor(/^MODIFIED\s+wa\s+brown\s+130\s/m);
      await plain.waitFor(/^wa\s+brown\s+130\s/m);
      assert.match(await ok(['delete', 'll', 'wa', '-n', ns]), /"wa" deleted/);
      await events.waitFor(/^DELETED\s+wa\s+brown\s+130\s/m);
      const rows = table(events.stdout);
      assert.deepEqual(headerOf(events.stdout), ['EVENT', 'NAME', 'COLOR', 'WEIGHT', 'AGE']);
      assert.deepEqual(rows.map((r) => [r.EVENT, r.NAME, r.WEIGHT]), [['ADDED', 'wa', '120'], ['MODIFIED', 'wa', '130'], ['DELETED', 'wa', '130']]);
      assert.equal(events.child.exitCode, null, 'the watch must still be open');
    } finally {
      await Promise.all([events.stop(), plain.stop()]);
    }
  });

  test('get llama X -w follows one object; -o yaml -w prints full objects', async () => {
    const ns = 'watch-one';
    await create(ns, llama('solo', { weight: 50 }), llama('other', { weight: 51 }));
    const one = srv.spawnKubectl(['get', 'llama', 'solo', '-n', ns, '-w']);
    const asYaml = srv.spawnKubectl(['get', 'll', '-n', ns, '-w', '-o', 'yaml']);
    try {
      await one.waitFor(/^solo\s+white\s+50\s/m);
      await asYaml.waitFor(/name: other[\s\S]*weight: 51/);
      await ok(['patch', 'll', 'other', '-n', ns, '--type', 'merge', '-p', '{"spec":{"weight":52}}']);
      await ok(['patch', 'll', 'solo', '-n', ns, '--type', 'merge', '-p', '{"spec":{"weight":49}}']);
      await one.waitFor(/^solo\s+white\s+49\s/m);
      await asYaml.waitFor(/name: solo[\s\S]*weight: 49/);
      assert.ok(!/other/.test(one.stdout), `single-object watch leaked another llama:\n${one.stdout}`);
      const docs = parseAllDocuments(asYaml.stdout).map((d) => d.toJS());
      const last = docs.at(-1);
      assert.equal(last.kind, 'Llama');
      assert.equal(last.metadata.name, 'solo');
      assert.equal(last.spec.weight, 49);
      assert.ok(docs.some((d) => d.metadata.name === 'other' && d.spec.weight === 52), asYaml.stdout);
    } finally {
      await Promise.all([one.stop(), asYaml.stop()]);
    }
  });

  test('kubectl wait --for=delete returns once the llama is deleted', async () => {
    const ns = 'wait-ns';
    await create(ns, llama('goner'));
    const waiter = srv.spawnKubectl(['wait', '--for=delete', 'llama/goner', '-n', ns, '--timeout=20s']);
    await new Promise((r) => setTimeout(r, 500));
    await ok(['delete', 'llama', 'goner', '-n', ns, '--wait=false']);
    const r = await waiter.exited;
    assert.equal(r.code, 0, explain(r));
    assert.match(r.stdout, /llama\.farm\.example\.com\/goner condition met/);
  });

  test('describe llama shows metadata and spec', async () => {
    const ns = 'describe-ns';
    await create(ns, llama('desc', { weight: 42, food: 'apples', labels: { app: 'farm' } }));
    const out = await ok(['describe', 'llama', 'desc', '-n', ns]);
    assert.match(out, /^Name:\s+desc$/m);
    assert.match(out, /^Namespace:\s+describe-ns$/m);
    assert.match(out, /^Labels:\s+app=farm$/m);
    assert.match(out, /^API Version:\s+farm\.example\.com\/v1alpha$/m);
    assert.match(out, /^Kind:\s+Llama$/m);
    assert.match(out, /^\s+Weight:\s+42$/m);
    assert.match(out, /^\s+Favorite Food:\s+apples$/m);
  });

  test('explain llama / llama.spec / llama.spec.color / --recursive', async () => {
    const top = await ok(['explain', 'llama']);
    assert.match(top, /^KIND:\s+Llama$/m);
    assert.match(top, /^GROUP:\s+farm\.example\.com$/m);
    assert.match(top, /^VERSION:\s+v1alpha$/m);
    assert.match(top, /Llama is a llama living on the farm/);
    assert.match(top, /^\s+spec\s+<Object> -required-$/m);
    assert.match(top, /LlamaSpec is the desired state of a Llama/);
    assert.match(top, /LlamaStatus is the most recently observed state of a Llama/);
    assert.doesNotMatch(top, /<no description>/);

    const spec = await ok(['explain', 'llama.spec']);
    assert.match(spec, /^FIELD:\s+spec <Object>$/m);
    for (const [field, type, desc] of [
      ['weight', 'number', /Weight of the llama in kilograms/],
      ['height', 'number', /Height of the llama at the withers/],
      ['color', 'string', /Colour of the llama's fleece/],
      ['favoriteFood', 'string', /The food the llama likes best/],
      ['shorn', 'boolean', /Whether the llama has been shorn/],
    ] as const) {
      assert.match(spec, new RegExp(`^\\s+${field}\\s+<${type}>`, 'm'), `${field} in:\n${spec}`);
      assert.match(spec, desc);
    }
    assert.match(spec, /^\s+weight\s+<number> -required-$/m);
    assert.doesNotMatch(spec, /<no description>/);

    const color = await ok(['explain', 'llama.spec.color']);
    assert.match(color, /^FIELD:\s+color <string>$/m);
    assert.match(color, /ENUM:\s+white\s+brown\s+black\s+grey\s+spotted/);

    // --recursive prints the field tree (names and types only, by kubectl's design).
    const rec = await ok(['explain', 'llama.spec', '--recursive']);
    for (const field of ['color', 'favoriteFood', 'height', 'shorn', 'weight']) assert.match(rec, new RegExp(`^\\s+${field}\\s+<`, 'm'));
    assert.doesNotMatch(rec, /<no description>/);
    const recTop = await ok(['explain', 'llama', '--recursive']);
    assert.match(recTop, /^\s+spec\s+<Object> -required-\n(\s{4}\S.*\n)*\s{4}weight\s+<number> -required-$/m);
    // status: metav1.Condition's fields (required as upstream publishes them), then observedGeneration.
    assert.match(recTop, /^\s+status\s+<Object>\n\s{4}conditions\s+<\[\]Condition>\n(\s{6}\S.*\n)*\s{6}type\s+<string> -required-\n\s{4}observedGeneration\s+<integer>$/m);
  });

  test('apply -f: created, unchanged, then configured with the change visible', async () => {
    const ns = 'apply-ns';
    const file = join(srv.dir, 'apply.yaml');
    await writeFile(file, yamlOf(llama('ap', { ns, weight: 100, color: 'brown', labels: { app: 'farm' } })));
    assert.equal((await ok(['apply', '-f', file])).trim(), 'llama.farm.example.com/ap created');
    assert.equal((await ok(['apply', '-f', file])).trim(), 'llama.farm.example.com/ap unchanged');
    const first = await getJson(ns, 'ap');
    assert.ok(first.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'], 'last-applied annotation');

    await writeFile(file, yamlOf(llama('ap', { ns, weight: 100, color: 'black', labels: { app: 'farm' } })));
    assert.equal((await ok(['apply', '-f', file])).trim(), 'llama.farm.example.com/ap configured');
    const after = await getJson(ns, 'ap');
    assert.equal(after.spec.color, 'black');
    assert.equal(after.metadata.generation, 2);
    assert.equal(after.metadata.uid, first.metadata.uid);
    assert.equal(JSON.parse(after.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).spec.color, 'black');
    // Removing a field from the manifest removes it from the object (three-way merge).
    await writeFile(file, yamlOf(llama('ap', { ns, weight: 100, color: 'black' })));
    assert.equal((await ok(['apply', '-f', file])).trim(), 'llama.farm.example.com/ap configured');
    assert.equal((await getJson(ns, 'ap')).metadata.labels, undefined);
  });

  test('edit with a non-interactive EDITOR script', async () => {
    const ns = 'edit-ns';
    await create(ns, llama('ed', { food: 'hay' }));
    const script = join(srv.dir, 'editor.sh');
    await writeFile(script, '#!/bin/sh\nsed -i -e "s/favoriteFood: hay/favoriteFood: carrots/" -e "s/weight: 100/weight: 101/" "$1"\n');
    await chmod(script, 0o755);
    const out = await ok(['edit', 'llama', 'ed', '-n', ns], { env: { EDITOR: script } });
    assert.equal(out.trim(), 'llama.farm.example.com/ed edited');
    const obj = await getJson(ns, 'ed');
    assert.equal(obj.spec.favoriteFood, 'carrots');
    assert.equal(obj.spec.weight, 101);
    // An editor that changes nothing.
    await writeFile(script, '#!/bin/sh\ntrue\n');
    const r = await k(['edit', 'llama', 'ed', '-n', ns], { env: { EDITOR: script } });
    assert.equal(r.code, 0, explain(r));
    assert.match(r.stdout + r.stderr, /Edit cancelled, no changes made/);
  });

  test('patch --type merge', async () => {
    const ns = 'patch-merge';
    await create(ns, llama('pm', { weight: 100, food: 'hay' }));
    assert.equal((await ok(['patch', 'llama', 'pm', '-n', ns, '--type', 'merge', '-p', '{"spec":{"weight":99,"favoriteFood":null}}'])).trim(),
      'llama.farm.example.com/pm patched');
    const obj = await getJson(ns, 'pm');
    assert.equal(obj.spec.weight, 99);
    assert.equal(obj.spec.favoriteFood, undefined);
    assert.equal(obj.metadata.generation, 2);
  });

  test('patch --type json', async () => {
    const ns = 'patch-json';
    await create(ns, llama('pj', { height: 1.5 }));
    assert.equal((await ok(['patch', 'llama', 'pj', '-n', ns, '--type', 'json', '-p',
      '[{"op":"replace","path":"/spec/height","value":1.9},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]'])).trim(),
    'llama.farm.example.com/pj patched');
    const obj = await getJson(ns, 'pj');
    assert.equal(obj.spec.height, 1.9);
    assert.deepEqual(obj.metadata.labels, { x: 'y' });
    const bad = await fails(['patch', 'llama', 'pj', '-n', ns, '--type', 'json', '-p', '[{"op":"test","path":"/spec/height","value":7}]']);
    assert.match(bad, /Error from server|test operation failed|Invalid|UnprocessableEntity/i);
    assert.equal((await getJson(ns, 'pj')).spec.height, 1.9);
  });

  test('plain patch (strategic merge, the default) is refused: not supported by Llama', async () => {
    const ns = 'patch-smp';
    await create(ns, llama('ps', { weight: 100 }));
    const err = await fails(['patch', 'llama', 'ps', '-n', ns, '-p', '{"spec":{"weight":98}}']);
    assert.match(err, /application\/strategic-merge-patch\+json is not supported by farm\.example\.com\/v1alpha, Kind=Llama/);
    assert.equal((await getJson(ns, 'ps')).spec.weight, 100);
  });

  test('label, label --overwrite, label key- removal, annotate', async () => {
    const ns = 'label-ns';
    await create(ns, llama('lb'));
    assert.equal((await ok(['label', 'llama', 'lb', '-n', ns, 'tier=a'])).trim(), 'llama.farm.example.com/lb labeled');
    assert.deepEqual((await getJson(ns, 'lb')).metadata.labels, { tier: 'a' });
    const refused = await fails(['label', 'llama', 'lb', '-n', ns, 'tier=b']);
    assert.match(refused, /'tier' already has a value \(a\), and --overwrite is false/);
    assert.equal((await ok(['label', 'llama', 'lb', '-n', ns, 'tier=b', '--overwrite'])).trim(), 'llama.farm.example.com/lb labeled');
    assert.deepEqual((await getJson(ns, 'lb')).metadata.labels, { tier: 'b' });
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns, '-l', 'tier=b'])), ['lb']);
    assert.equal((await ok(['label', 'llama', 'lb', '-n', ns, 'tier-'])).trim(), 'llama.farm.example.com/lb unlabeled');
    assert.equal((await getJson(ns, 'lb')).metadata.labels?.tier, undefined);

    assert.equal((await ok(['annotate', 'llama', 'lb', '-n', ns, 'farm.example.com/note=shy llama'])).trim(), 'llama.farm.example.com/lb annotated');
    assert.equal(await ok(['get', 'llama', 'lb', '-n', ns, '-o', 'jsonpath={.metadata.annotations.farm\\.example\\.com/note}']), 'shy llama');
    assert.equal((await ok(['annotate', 'llama', 'lb', '-n', ns, 'farm.example.com/note-'])).trim(), 'llama.farm.example.com/lb annotated');
    assert.equal((await getJson(ns, 'lb')).metadata.annotations?.['farm.example.com/note'], undefined);
  });

  test('replace -f works; a stale resourceVersion is refused with Conflict', async () => {
    const ns = 'replace-ns';
    await create(ns, llama('rp', { weight: 100 }));
    const file = join(srv.dir, 'replace.yaml');
    const current = parseYaml(await ok(['get', 'llama', 'rp', '-n', ns, '-o', 'yaml']));
    current.spec.weight = 77;
    await writeFile(file, stringify(current));
    assert.equal((await ok(['replace', '-f', file])).trim(), 'llama.farm.example.com/rp replaced');
    const replaced = await getJson(ns, 'rp');
    assert.equal(replaced.spec.weight, 77);
    assert.notEqual(replaced.metadata.resourceVersion, current.metadata.resourceVersion);

    // The file still carries the old resourceVersion: the server must refuse it.
    current.spec.weight = 66;
    await writeFile(file, stringify(current));
    const err = await fails(['replace', '-f', file]);
    assert.match(err, /Error from server \(Conflict\)/);
    assert.match(err, /Operation cannot be fulfilled on llamas\.farm\.example\.com "rp": the object has been modified; please apply your changes to the latest version and try again/);
    assert.equal((await getJson(ns, 'rp')).spec.weight, 77);

    // Without a resourceVersion in the file kubectl injects the current one.
    assert.equal((await ok(['replace', '-f', '-'], { input: yamlOf(llama('rp', { ns, weight: 55 })) })).trim(), 'llama.farm.example.com/rp replaced');
    assert.equal((await getJson(ns, 'rp')).spec.weight, 55);
  });

  test('replace of a llama that does not exist is NotFound (like a CR: no create on update)', async () => {
    const err = await fails(['replace', '-f', '-'], { input: yamlOf(llama('ghost', { ns: 'replace-missing' })) });
    assert.match(err, /Error from server \(NotFound\).*llamas\.farm\.example\.com "ghost" not found/);
  });

  test('delete llama X', async () => {
    const ns = 'del-one';
    await create(ns, llama('d1'), llama('d2'));
    assert.equal((await ok(['delete', 'llama', 'd1', '-n', ns])).trim(), 'llama.farm.example.com "d1" deleted');
    assert.match(await fails(['get', 'llama', 'd1', '-n', ns]), /Error from server \(NotFound\)/);
    assert.match(await ok(['get', 'll', '-n', ns, '--field-selector', 'metadata.name=d1', '-o', 'name']), /^$/);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns])), ['d2']);
    const again = await fails(['delete', 'llama', 'd1', '-n', ns]);
    assert.match(again, /Error from server \(NotFound\): llamas\.farm\.example\.com "d1" not found/);
  });

  test('get of a missing llama in the default namespace: NotFound naming the llama', async () => {
    const err = await fails(['get', 'llama', 'no-such-llama']);
    assert.equal(err.trim(), 'Error from server (NotFound): llamas.farm.example.com "no-such-llama" not found');
  });

  // kubectl (cli-runtime Info.Get) follows a NotFound in a non-default namespace with
  // GET /api/v1/namespaces/<ns>; if THAT is 404 it reports the namespace error instead of the llama's.
  test('get of a missing llama in another namespace: NotFound naming the llama', async () => {
    await create('missing-ns', llama('present'));
    const err = await fails(['get', 'llama', 'no-such-llama', '-n', 'missing-ns']);
    assert.equal(err.trim(), 'Error from server (NotFound): llamas.farm.example.com "no-such-llama" not found');
  });

  test('delete --all empties one namespace only', async () => {
    await create('del-all', llama('x1'), llama('x2'), llama('x3'));
    await create('del-all-keep', llama('keep'));
    const out = await ok(['delete', 'llamas', '--all', '-n', 'del-all']);
    assert.deepEqual(out.trim().split('\n').sort(), ['x1', 'x2', 'x3'].map((n) => `llama.farm.example.com "${n}" deleted`));
    const r = await k(['get', 'll', '-n', 'del-all']);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /No resources found in del-all namespace\./);
    assert.deepEqual(names(await ok(['get', 'll', '-n', 'del-all-keep'])), ['keep']);
  });

  test('delete -l deletes only the matching llamas', async () => {
    const ns = 'del-label';
    await create(ns, llama('m1', { labels: { app: 'farm' } }), llama('m2', { labels: { app: 'farm' } }), llama('n1', { labels: { app: 'zoo' } }));
    const out = await ok(['delete', 'llamas', '-l', 'app=farm', '-n', ns]);
    assert.deepEqual(out.trim().split('\n').sort(), ['llama.farm.example.com "m1" deleted', 'llama.farm.example.com "m2" deleted']);
    assert.deepEqual(names(await ok(['get', 'll', '-n', ns])), ['n1']);
  });

  test('create --dry-run=server prints "(server dry run)" and stores nothing', async () => {
    const ns = 'dry-ns';
    const out = await ok(['create', '--dry-run=server', '-n', ns, '-f', '-'], { input: yamlOf(llama('dry', { weight: 12 })) });
    assert.equal(out.trim(), 'llama.farm.example.com/dry created (server dry run)');
    const asJson = JSON.parse(await ok(['create', '--dry-run=server', '-n', ns, '-f', '-', '-o', 'json'], { input: yamlOf(llama('dry', { weight: 12 })) }));
    assert.equal(asJson.spec.color, 'white', 'defaults are applied in a dry run');
    const err = await fails(['get', 'llama', 'dry', '-n', ns]);
    assert.match(err, /NotFound/);
    // A dry-run that is invalid is still rejected.
    const bad = await fails(['create', '--dry-run=server', '-n', ns, '-f', '-'], { input: yamlOf(llama('dry', { spec: { height: 1 } })) });
    assert.match(bad, /spec\.weight: Required value/);
  });

  test('invalid objects are rejected with field-level messages', async () => {
    const ns = 'invalid-ns';
    const missing = await fails(['create', '-n', ns, '-f', '-'], { input: yamlOf(llama('bad1', { spec: { height: 1.5 } })) });
    assert.match(missing, /The Llama "bad1" is invalid: spec\.weight: Required value/);

    const color = await fails(['create', '-n', ns, '-f', '-'], { input: yamlOf(llama('bad2', { color: 'purple' })) });
    assert.match(color, /spec\.color: Unsupported value: "purple": supported values: "white", "brown", "black", "grey", "spotted"/);

    const unknown = await fails(['create', '-n', ns, '-f', '-'], { input: yamlOf(llama('bad3', { spec: { weight: 1, height: 1, foo: 1 } })) });
    assert.match(unknown, /strict decoding error: unknown field "spec\.foo"/);
    const unknownApply = await fails(['apply', '-n', ns, '-f', '-'], { input: yamlOf(llama('bad3', { spec: { weight: 1, height: 1, foo: 1 } })) });
    assert.match(unknownApply, /strict decoding error: unknown field "spec\.foo"/);

    const negative = await fails(['create', '-n', ns, '-f', '-'], { input: yamlOf(llama('bad4', { weight: -1, height: 0 })) });
    assert.match(negative, /spec\.weight: Invalid value: -1/);
    assert.match(negative, /spec\.height: Invalid value: 0/);

    const r = await k(['get', 'll', '-n', ns]);
    assert.equal(r.stdout, '', 'nothing invalid was stored');
  });

  test('a wrong bearer token gets Unauthorized', async () => {
    const bad = join(srv.dir, 'kubeconfig-bad-token');
    const text = await readFile(srv.kubeconfig, 'utf8');
    assert.match(text, /token: \S+/);
    await writeFile(bad, text.replace(/token: \S+/, 'token: not-the-right-token'));
    // Warm discovery cache: the list itself gets the 401 Status (message "Unauthorized").
    const warm = await k(['get', 'llamas'], { kubeconfig: bad });
    assert.notEqual(warm.code, 0, explain(warm));
    assert.match(warm.stderr, /error: You must be logged in to the server \(Unauthorized\)/);
    assert.equal(warm.stdout, '');
    // Cold cache: discovery gets the 401 first; client-go words it its own way.
    const cold = await k(['get', 'llamas'], { kubeconfig: bad, home: join(srv.dir, 'home-bad-token') });
    assert.notEqual(cold.code, 0, explain(cold));
    assert.match(cold.stderr, /error: You must be logged in to the server \((Unauthorized|the server has asked for the client to provide credentials)\)/);
    assert.equal(cold.stdout, '');
    // The right token still works.
    assert.equal((await k(['version', '-o', 'json'])).code, 0);
  });

  test('a rotated serving certificate is served without a restart; kubectl keeps working', async () => {
    const certs = join(srv.dir, 'certs');
    const [caCert, caKey] = await Promise.all([readFile(join(certs, 'ca.crt'), 'utf8'), readFile(join(certs, 'ca.key'), 'utf8')]);
    const rotated = await generate([{ name: 'commonName', value: 'farm-apiserver-rotated' }], {
      keyType: 'ec', algorithm: 'sha256', ca: { key: caKey, cert: caCert }, notAfterDate: new Date(Date.now() + 864e5),
      extensions: [{ name: 'basicConstraints', cA: false }, { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
    });
    // Replace atomically, as a Secret volume update does.
    for (const [file, pem] of [['tls.key', rotated.private], ['tls.crt', rotated.cert]] as const) {
      await writeFile(join(certs, `${file}.new`), pem, { mode: 0o600 });
      await rename(join(certs, `${file}.new`), join(certs, file));
    }
    const servedCN = () => new Promise<string>((resolve, reject) => {
      const sock = tlsConnect({ host: '127.0.0.1', port: srv.port, ca: caCert, servername: 'localhost' }, () => {
        const cn = sock.getPeerCertificate().subject.CN;
        sock.destroy();
        resolve(Array.isArray(cn) ? cn.join(',') : (cn ?? ''));
      });
      sock.on('error', reject);
    });
    const deadline = Date.now() + 20_000;
    let cn = await servedCN();
    while (cn !== 'farm-apiserver-rotated' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      cn = await servedCN();
    }
    assert.equal(cn, 'farm-apiserver-rotated', `still serving the old certificate\n${srv.log}`);
    assert.match(await ok(['get', 'llamas', '-A']), /NAMESPACE/);
  });

  // Keep last: it stops the server.
  test('SIGTERM exits 0 within a few seconds, ending an open kubectl get -w', async () => {
    await create('sigterm-ns', llama('last'));
    const watch = srv.spawnKubectl(['get', 'll', '-A', '-w']);
    await watch.waitFor(/^sigterm-ns\s+last\s/m);
    // kubectl cannot tell a clean end from a dropped socket; a raw watch can: a clean end is a complete chunked response.
    const [ca, token] = await Promise.all([readFile(join(srv.dir, 'certs', 'ca.crt'), 'utf8'), readFile(join(srv.dir, 'certs', 'token'), 'utf8')]);
    const raw = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      httpsGet(`https://127.0.0.1:${srv.port}/apis/farm.example.com/v1alpha/llamas?watch=true`, { ca, headers: { authorization: `Bearer ${token.trim()}` } }, resolve).on('error', reject);
    });
    raw.resume();
    const rawEnd = new Promise<boolean>((resolve) => { raw.on('end', () => resolve(raw.complete)); raw.on('close', () => resolve(raw.complete)); });
    const exit = await Promise.race([
      srv.stop(),
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`server still running 8 s after SIGTERM:\n${srv.log}`)), 8000)),
    ]);
    assert.deepEqual(exit, { code: 0, signal: null }, srv.log);
    assert.equal(await rawEnd, true, 'the open watch was cut off instead of ended cleanly');
    const watchEnd = await Promise.race([
      watch.exited,
      new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`kubectl get -w still running after the server exited:\n${watch.stdout}\n${watch.stderr}`)), 10_000)),
    ]);
    assert.equal(watchEnd.signal, null, 'kubectl ended on its own, not killed');
  });
});
