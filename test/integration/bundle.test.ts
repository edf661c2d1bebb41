// The production bundle (scripts/bundle.ts): each start compiles every chunk it loads, so what the
// chunks hold is start-up time. A dynamic import of client-node itself once kept all of its generated
// API (14 MB of the bundle's 20) where the server uses only KubeConfig.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bundleInto } from '../../scripts/bundle.js';

// Inside the repository, where the packages the bundle keeps resolve.
const root = join(import.meta.dirname, '..', '..', '.cache', `bundle-test-${process.pid}`);
let chunks: { name: string; text: string; bytes: number }[] = [];

before(async () => {
  const entry = await bundleInto(root);
  const dir = join(entry, '..');
  chunks = readdirSync(dir).filter((f) => f.endsWith('.js')).map((name) => ({
    name, text: readFileSync(join(dir, name), 'utf8'), bytes: statSync(join(dir, name)).size,
  }));
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('the bundle', () => {
  it('keeps of client-node only what KubeConfig needs: none of its generated API clients', () => {
    assert.ok(chunks.some((c) => c.text.includes('loadFromCluster')), 'KubeConfig is in the bundle');
    const withApis = chunks.filter((c) => c.text.includes('CoreV1Api'));
    assert.deepEqual(withApis.map((c) => c.name), [], 'chunks with client-node\'s generated CoreV1Api');
  });

  it('is under 10 MB of JavaScript in all', () => {
    const total = chunks.reduce((n, c) => n + c.bytes, 0);
    assert.ok(total < 10 * 1024 * 1024, `the chunks hold ${(total / 1024 / 1024).toFixed(1)} MB`);
  });

  it('uses npm\'s punycode, not Node\'s deprecated one (DEP0040 from outside node_modules)', () => {
    const requiring = chunks.filter((c) => /require\("punycode"\)/.test(c.text));
    assert.deepEqual(requiring.map((c) => c.name), []);
  });
});
