// The storage flags: --storage-backend and kube-apiserver's --etcd-* flags, with their env equivalents.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseGoDuration } from '../../src/apimachinery/duration.js';

const load = (argv: string[], env: NodeJS.ProcessEnv = {}) => loadConfig(argv, env, { fileExists: () => false });

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    assert.ok(!/[\r\n]/.test(e.message), 'one line');
    return e.message;
  }
  assert.fail('expected a ConfigError');
}

const etcd3 = ['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:2379'];

describe('storage flags', () => {
  it('memory by default, with no etcd settings', () => {
    const c = load([]);
    assert.equal(c.storageBackend, 'memory');
    assert.equal(c.etcd, undefined);
  });

  it('etcd3 with kube-apiserver defaults: prefix /registry, compaction every 5m', () => {
    const c = load(etcd3);
    assert.equal(c.storageBackend, 'etcd3');
    assert.deepEqual(c.etcd, { servers: ['http://127.0.0.1:2379'], prefix: '/registry', compactionIntervalMs: 300_000 });
  });

  it('every etcd setting from flags', () => {
    const c = load(['--storage-backend', 'etcd3', '--etcd-servers', 'https://a:2379, https://b:2379', '--etcd-prefix=/farm/registry',
      '--etcd-cafile=/ca', '--etcd-certfile=/crt', '--etcd-keyfile=/key', '--etcd-compaction-interval=1h30m']);
    assert.deepEqual(c.etcd, {
      servers: ['https://a:2379', 'https://b:2379'], prefix: '/farm/registry', caFile: '/ca', certFile: '/crt', keyFile: '/key',
      compactionIntervalMs: 5_400_000,
    });
  });

  it('every etcd setting from the environment; a flag wins over its variable', () => {
    const env = {
      FARM_STORAGE_BACKEND: 'etcd3', FARM_ETCD_SERVERS: 'https://e:2379', FARM_ETCD_PREFIX: '/p', FARM_ETCD_CAFILE: '/ca',
      FARM_ETCD_CERTFILE: '/c', FARM_ETCD_KEYFILE: '/k', FARM_ETCD_COMPACTION_INTERVAL: '0',
    };
    assert.deepEqual(load([], env).etcd, { servers: ['https://e:2379'], prefix: '/p', caFile: '/ca', certFile: '/c', keyFile: '/k', compactionIntervalMs: 0 });
    assert.equal(load(['--etcd-prefix=/q'], env).etcd?.prefix, '/q');
  });

  const bad: [string[], RegExp][] = [
    [['--storage-backend=etcd'], /--storage-backend "etcd": expected one of memory, etcd3/],
    [['--storage-backend=etcd3'], /needs --etcd-servers/],
    [['--etcd-servers=http://a:2379'], /--etcd-servers .*only used with --storage-backend=etcd3/],
    [['--etcd-compaction-interval=1m'], /--etcd-compaction-interval .*only used with/],
    [[...etcd3.slice(0, 1), '--etcd-servers=127.0.0.1:2379'], /--etcd-servers/],
    [[...etcd3.slice(0, 1), '--etcd-servers=http://a:2379,'], /--etcd-servers/],
    [[...etcd3.slice(0, 1), '--etcd-servers=http://user:pw@a:2379'], /--etcd-servers/],
    [[...etcd3.slice(0, 1), '--etcd-servers=http://a:2379/v3'], /--etcd-servers/],
    [[...etcd3.slice(0, 1), '--etcd-servers=unix:///run/etcd.sock'], /--etcd-servers/],
    [[...etcd3.slice(0, 1), '--etcd-servers=http://a:2379,https://b:2379'], /mixes http:\/\/ and https:\/\//],
    [[...etcd3, '--etcd-cafile=/ca'], /--etcd-cafile .*need https:\/\//],
    [[...etcd3.slice(0, 1), '--etcd-servers=https://a:2379', '--etcd-certfile=/c'], /--etcd-keyfile .* must be given too/],
    [[...etcd3.slice(0, 1), '--etcd-servers=https://a:2379', '--etcd-keyfile=/k'], /--etcd-certfile .* must be given too/],
    [[...etcd3, '--etcd-prefix=registry'], /--etcd-prefix/],
    [[...etcd3, '--etcd-prefix=/registry/'], /--etcd-prefix/],
    [[...etcd3, '--etcd-prefix=/a//b'], /--etcd-prefix/],
    [[...etcd3, '--etcd-prefix=/'], /--etcd-prefix/],
    [[...etcd3, '--etcd-prefix=/a b'], /--etcd-prefix/],
    [[...etcd3, '--etcd-compaction-interval=5'], /--etcd-compaction-interval "5": expected a Go duration/],
    [[...etcd3, '--etcd-compaction-interval=500ms'], /--etcd-compaction-interval/],
    [[...etcd3, '--etcd-compaction-interval=-5m'], /--etcd-compaction-interval/],
    [[...etcd3, '--etcd-compaction-interval=5 m'], /--etcd-compaction-interval/],
    [[...etcd3, '--etcd-compaction-interval=9999h'], /--etcd-compaction-interval/],
  ];
  for (const [argv, re] of bad) it(`refuses ${argv.join(' ')}`, () => assert.match(configError(() => load(argv)), re));
});

describe('parseGoDuration: time.ParseDuration', () => {
  const ok: [string, number][] = [
    ['0', 0], ['+0', 0], ['5m', 300_000], ['1h30m', 5_400_000], ['1.5s', 1500], ['.5s', 500], ['1.s', 1000], ['300ms', 300],
    ['1us', 0.001], ['1µs', 0.001], ['1μs', 0.001], ['2ns', 2e-6], ['-1m', -60_000], ['1h1h', 7_200_000], ['0s', 0],
  ];
  for (const [text, ms] of ok) it(`${text} = ${ms} ms`, () => assert.equal(parseGoDuration(text), ms));
  for (const text of ['', '-', '5', '.s', 's', '1h30', '1 m', '1sec', '1d', '1.5.5s', ' 5m', '5m ', '1e3s', '0x10s', '--1s']) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.equal(parseGoDuration(text), undefined));
  }

  it('any sum of units parses to the sum (property)', () => {
    const units: [string, number][] = [['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]];
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 1000 }), fc.constantFrom(...units)), { minLength: 1, maxLength: 6 }), (parts) => {
      const text = parts.map(([n, [u]]) => `${n}${u}`).join('');
      assert.equal(parseGoDuration(text), parts.reduce((sum, [n, [, ms]]) => sum + n * ms, 0));
    }));
  });

  it('never throws, whatever the text (property)', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...'0123456789.+-hmsuµnμ x') }), (text) => {
      const v = parseGoDuration(text);
      assert.ok(v === undefined || Number.isFinite(v));
    }));
  });
});

describe('--workers', () => {
  it('1 by default; more than one with etcd3, from the flag or FARM_WORKERS', () => {
    assert.equal(load([]).workers, 1);
    assert.equal(load([...etcd3, '--workers=2']).workers, 2);
    assert.equal(load(etcd3, { FARM_WORKERS: '4' }).workers, 4);
    assert.equal(load(['--workers=1']).workers, 1);
  });
  for (const [argv, re] of [
    [['--workers=2'], /--workers "2": more than one worker needs --storage-backend=etcd3/],
    [[...etcd3, '--workers=0'], /--workers "0": expected an integer between 1 and 64/],
    [[...etcd3, '--workers=65'], /--workers/],
    [[...etcd3, '--workers=two'], /--workers/],
  ] as [string[], RegExp][]) it(`refuses ${argv.join(' ')}`, () => assert.match(configError(() => load(argv)), re));
});
