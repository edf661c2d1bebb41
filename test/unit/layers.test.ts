// The folders of src/ are layers: a file may import its own layer or the ones below, never above
// (values and helpers < storage < registry < endpoints < server < main), so each can be read, tested
// and replaced without what sits on it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/** Rank of each top-level folder; files directly in src/ (main.ts, config.ts …) are the top. */
const ranks: Record<string, number> = { apimachinery: 0, storage: 1, upstream: 1, registry: 2, endpoints: 3, server: 4 };
/** bootstrap.ts (with bootstrap/, its code cache), main.ts, config.ts, startup.ts and certs/ (generated certificates, kubeconfigs) start the process. */
const MAIN = 5;

function layerOf(file: string): { name: string; rank: number } {
  const parts = relative(src, file).split('/');
  if (parts.length === 1 || parts[0] === 'certs' || parts[0] === 'bootstrap') return { name: 'main', rank: MAIN };
  const rank = ranks[parts[0]];
  assert.ok(rank !== undefined, `src/${parts[0]}/ is not a known layer: add it to the ranks in layers.test.ts`);
  return { name: parts[0], rank };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.[^'"]+)['"]/g)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

describe('layers of src/', () => {
  const files = sourceFiles(src);

  it('finds the source files (the test cannot pass on an empty tree)', () => {
    assert.ok(files.length > 50, `only ${files.length} files under ${src}`);
  });

  it('no import runs up a layer; sibling layers of the same rank do not import each other', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const target of importsOf(file)) {
        const to = layerOf(target);
        if (to.rank > from.rank || (to.rank === from.rank && to.name !== from.name)) {
          violations.push(`${relative(src, file)} (${from.name}) imports ${relative(src, target)} (${to.name})`);
        }
      }
    }
    assert.deepEqual(violations, []);
  });

  it('reads the imports of a file (the check sees what it checks)', () => {
    const imports = importsOf(join(src, 'registry/generic/store.ts')).map((f) => relative(src, f));
    assert.ok(imports.includes('storage/interfaces.ts') && imports.includes('apimachinery/status.ts'), imports.join(', '));
  });
});
