import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConfigError, type ConfigProbes, IN_CLUSTER_TOKEN_PATH, MAX_BODY_BYTES, OPTIONS, loadConfig, usage,
} from '../../src/config.js';

const notInCluster = { fileExists: () => false };
const tokenPresent = { fileExists: (p: string) => p === IN_CLUSTER_TOKEN_PATH };

function load(argv: string[], env: NodeJS.ProcessEnv = {}, probes: ConfigProbes = notInCluster) {
  return loadConfig(argv, env, probes);
}

/** Asserts a ConfigError whose message is one line, mentions `name`, and matches `re` if given. */
function assertConfigError(fn: () => unknown, name: string, re?: RegExp): string {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ConfigError, `expected ConfigError, got ${String(caught)}`);
  const msg = caught.message;
  assert.ok(!/[\r\n]/.test(msg), `message is not one line: ${JSON.stringify(msg)}`);
  assert.ok(msg.includes(name), `message ${JSON.stringify(msg)} does not name ${name}`);
  if (re) assert.match(msg, re);
  return msg;
}

describe('loadConfig defaults', () => {
  it('standalone defaults', () => {
    const c = load([]);
    assert.deepEqual(c, {
      port: 8443,
      bindAddress: '127.0.0.1',
      certDir: './certs',
      standalone: true,
      inCluster: false,
      logLevel: 'info',
      tlsCertFile: 'certs/tls.crt',
      tlsKeyFile: 'certs/tls.key',
      tlsFilesExplicit: false,
      watchHistory: 10000,
      watchQueue: 1000,
      bookmarkIntervalSeconds: 60,
      maxBodyBytes: MAX_BODY_BYTES,
      shutdownTimeoutSeconds: 5,
      storageBackend: 'memory',
      workers: 1,
      auditLogMaxAge: 0,
      auditLogMaxBackup: 0,
      auditLogMaxSize: 0,
      auditLogFormat: 'json',
      maxRequestsInflight: 400,
      maxMutatingRequestsInflight: 200,
      help: false,
    });
    assert.equal(MAX_BODY_BYTES, 3 * 1024 * 1024);
  });

  it('--kubeconfig switches to cluster mode and binds 0.0.0.0', () => {
    const c = load(['--kubeconfig', '/tmp/kc']);
    assert.equal(c.standalone, false);
    assert.equal(c.bindAddress, '0.0.0.0');
    assert.equal(c.kubeconfig, '/tmp/kc');
  });

  it('FARM_KUBECONFIG also switches to cluster mode; KUBECONFIG is ignored', () => {
    assert.equal(load([], { FARM_KUBECONFIG: '/tmp/kc' }).standalone, false);
    const c = load([], { KUBECONFIG: '/tmp/kc' });
    assert.equal(c.standalone, true);
    assert.equal(c.kubeconfig, undefined);
    assert.ok(!('kubeconfig' in c));
  });

  it('in-cluster needs both KUBERNETES_SERVICE_HOST and the service-account token', () => {
    const both = load([], { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, tokenPresent);
    assert.equal(both.inCluster, true);
    assert.equal(both.standalone, false);
    assert.equal(both.bindAddress, '0.0.0.0');
    assert.equal(load([], { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, notInCluster).standalone, true);
    assert.equal(load([], {}, tokenPresent).standalone, true);
  });

  it('--standalone forces standalone even in-cluster or with a kubeconfig', () => {
    const c = load(['--standalone'], { KUBERNETES_SERVICE_HOST: 'x' }, tokenPresent);
    assert.equal(c.standalone, true);
    assert.equal(c.inCluster, true);
    assert.equal(c.bindAddress, '127.0.0.1');
    assert.equal(load(['--kubeconfig=/k', '--standalone=true']).standalone, true);
  });

  it('tls files default under --cert-dir', () => {
    const c = load(['--cert-dir', '/var/run/farm/tls']);
    assert.equal(c.certDir, '/var/run/farm/tls');
    assert.equal(c.tlsCertFile, '/var/run/farm/tls/tls.crt');
    assert.equal(c.tlsKeyFile, '/var/run/farm/tls/tls.key');
    assert.equal(c.tlsFilesExplicit, false);
  });
});

describe('loadConfig flags', () => {
  it('accepts --flag value and --flag=value', () => {
    assert.equal(load(['--port', '9443']).port, 9443);
    assert.equal(load(['--port=9443']).port, 9443);
  });

  it('parses every flag', () => {
    const c = load([
      '--port=1', '--bind-address', '::', '--cert-dir=/c', '--standalone=false', '--log-level', 'debug',
      '--kubeconfig', '/k', '--tls-cert-file', '/t.crt', '--tls-key-file=/t.key', '--watch-history', '0',
      '--watch-queue=5', '--bookmark-interval-seconds', '3600', '--shutdown-timeout-seconds=0',
    ]);
    assert.equal(c.port, 1);
    assert.equal(c.bindAddress, '::');
    assert.equal(c.certDir, '/c');
    assert.equal(c.standalone, false);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.kubeconfig, '/k');
    assert.equal(c.tlsCertFile, '/t.crt');
    assert.equal(c.tlsKeyFile, '/t.key');
    assert.equal(c.tlsFilesExplicit, true);
    assert.equal(c.watchHistory, 0);
    assert.equal(c.watchQueue, 5);
    assert.equal(c.bookmarkIntervalSeconds, 3600);
    assert.equal(c.shutdownTimeoutSeconds, 0);
  });

  it('boolean forms', () => {
    const k = ['--kubeconfig', '/k'];
    assert.equal(load([...k, '--standalone']).standalone, true);
    assert.equal(load([...k, '--standalone=true']).standalone, true);
    assert.equal(load([...k, '--standalone=TRUE']).standalone, true);
    assert.equal(load([...k, '--standalone=1']).standalone, true);
    assert.equal(load(['--standalone=false', ...k]).standalone, false);
    assert.equal(load(['--standalone=0', ...k]).standalone, false);
  });

  it('a bare boolean never consumes the next argument', () => {
    assertConfigError(() => load(['--standalone', 'false']), '"false"', /unexpected argument/);
  });

  it('last occurrence wins', () => {
    assert.equal(load(['--port', '1', '--port=2']).port, 2);
  });

  it('--help / -h', () => {
    assert.equal(load(['--help']).help, true);
    assert.equal(load(['-h']).help, true);
    assert.equal(load(['--port=1', '--help']).help, true);
    // --help short-circuits: other flags and env are not validated
    assert.equal(load(['--port=abc', '--help'], { FARM_PORT: 'x' }).port, 8443);
    assert.equal(load([]).help, false);
  });
});

describe('loadConfig env and precedence', () => {
  it('every option has a FARM_ env equivalent', () => {
    const c = load([], {
      FARM_PORT: '9000', FARM_BIND_ADDRESS: '10.1.2.3', FARM_CERT_DIR: '/e', FARM_STANDALONE: 'false',
      FARM_LOG_LEVEL: 'warn', FARM_KUBECONFIG: '/ek', FARM_TLS_CERT_FILE: '/e.crt', FARM_TLS_KEY_FILE: '/e.key',
      FARM_WATCH_HISTORY: '7', FARM_WATCH_QUEUE: '8', FARM_BOOKMARK_INTERVAL_SECONDS: '9',
      FARM_SHUTDOWN_TIMEOUT_SECONDS: '10',
    });
    assert.equal(c.port, 9000);
    assert.equal(c.bindAddress, '10.1.2.3');
    assert.equal(c.certDir, '/e');
    assert.equal(c.standalone, false);
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.kubeconfig, '/ek');
    assert.equal(c.tlsCertFile, '/e.crt');
    assert.equal(c.tlsKeyFile, '/e.key');
    assert.equal(c.tlsFilesExplicit, true);
    assert.equal(c.watchHistory, 7);
    assert.equal(c.watchQueue, 8);
    assert.equal(c.bookmarkIntervalSeconds, 9);
    assert.equal(c.shutdownTimeoutSeconds, 10);
    for (const o of OPTIONS) assert.match(o.env, /^FARM_[A-Z_]+$/);
  });

  it('flag > env > default', () => {
    assert.equal(load([], {}).port, 8443);
    assert.equal(load([], { FARM_PORT: '9000' }).port, 9000);
    assert.equal(load(['--port', '9443'], { FARM_PORT: '9000' }).port, 9443);
    assert.equal(load(['--log-level=error'], { FARM_LOG_LEVEL: 'trace' }).logLevel, 'error');
    assert.equal(load(['--cert-dir=/f'], { FARM_CERT_DIR: '/e' }).tlsCertFile, '/f/tls.crt');
  });

  it('a valid flag overrides an invalid env value', () => {
    assert.equal(load(['--port=1'], { FARM_PORT: 'abc' }).port, 1);
  });

  it('FARM_STANDALONE=true beats an in-cluster environment', () => {
    const c = load([], { FARM_STANDALONE: 'true', KUBERNETES_SERVICE_HOST: 'h' }, tokenPresent);
    assert.equal(c.standalone, true);
    assert.equal(c.bindAddress, '127.0.0.1');
  });

  it('empty env vars count as unset', () => {
    assert.equal(load([], { FARM_PORT: '' }).port, 8443);
  });
});

describe('loadConfig errors', () => {
  it('the example message for --port', () => {
    const msg = assertConfigError(() => load(['--port', 'abc']), '--port');
    assert.equal(msg, 'invalid --port "abc": expected an integer between 1 and 65535');
  });

  const bad: Array<[string[], string]> = [
    [['--port=0'], '--port'],
    [['--port=65536'], '--port'],
    [['--port=1.5'], '--port'],
    [['--port=-1'], '--port'],
    [['--port=0x10'], '--port'],
    [['--port=1e3'], '--port'],
    [['--port='], '--port'],
    [['--bind-address', 'localhost'], '--bind-address'],
    [['--bind-address=300.1.1.1'], '--bind-address'],
    [['--cert-dir='], '--cert-dir'],
    [['--cert-dir', '  '], '--cert-dir'],
    [['--standalone=yes'], '--standalone'],
    [['--standalone='], '--standalone'],
    [['--log-level', 'verbose'], '--log-level'],
    [['--kubeconfig='], '--kubeconfig'],
    [['--tls-cert-file='], '--tls-cert-file'],
    [['--tls-key-file='], '--tls-key-file'],
    [['--watch-history=-1'], '--watch-history'],
    [['--watch-history=1000001'], '--watch-history'],
    [['--watch-queue=0'], '--watch-queue'],
    [['--bookmark-interval-seconds=0'], '--bookmark-interval-seconds'],
    [['--bookmark-interval-seconds=3601'], '--bookmark-interval-seconds'],
    [['--shutdown-timeout-seconds=301'], '--shutdown-timeout-seconds'],
    [['--shutdown-timeout-seconds=soon'], '--shutdown-timeout-seconds'],
  ];
  for (const [argv, flag] of bad) {
    it(`rejects ${argv.join(' ')}`, () => {
      assertConfigError(() => load(argv), flag, /^invalid --[a-z-]+ ".*": expected /);
    });
  }

  it('log level message lists the choices', () => {
    assertConfigError(() => load(['--log-level=verbose']), '--log-level',
      /expected one of fatal, error, warn, info, debug, trace, silent$/);
  });

  it('unknown flags', () => {
    assertConfigError(() => load(['--prot=1']), '--prot', /^unknown flag --prot/);
    assertConfigError(() => load(['--nope']), '--nope', /^unknown flag/);
    assertConfigError(() => load(['-p', '1']), '-p', /^unknown flag/);
  });

  it('positional arguments', () => {
    assertConfigError(() => load(['serve']), '"serve"', /^unexpected argument/);
    assertConfigError(() => load(['--', 'x']), '"x"', /^unexpected argument/);
    assert.equal(load(['--']).port, 8443);
  });

  it('missing values', () => {
    assertConfigError(() => load(['--port']), '--port', /^missing value for --port: expected an integer/);
    assertConfigError(() => load(['--cert-dir', '--port=1']), '--cert-dir', /^missing value/);
  });

  it('env errors name the env var and the flag', () => {
    const msg = assertConfigError(() => load([], { FARM_PORT: 'abc' }), '--port');
    assert.equal(msg, 'invalid FARM_PORT (--port) "abc": expected an integer between 1 and 65535');
    assertConfigError(() => load([], { FARM_STANDALONE: 'maybe' }), 'FARM_STANDALONE');
    assertConfigError(() => load([], { FARM_LOG_LEVEL: 'loud' }), 'FARM_LOG_LEVEL');
    assertConfigError(() => load([], { FARM_WATCH_QUEUE: '0' }), 'FARM_WATCH_QUEUE');
    assertConfigError(() => load([], { FARM_BIND_ADDRESS: 'host' }), 'FARM_BIND_ADDRESS');
  });

  it('values with newlines still give a one-line message', () => {
    assertConfigError(() => load(['--port', '1\n2']), '--port');
    assertConfigError(() => load([], { FARM_LOG_LEVEL: 'a\nb' }), 'FARM_LOG_LEVEL');
  });

  it('cluster mode without kubeconfig or in-cluster account', () => {
    assertConfigError(() => load(['--standalone=false']), '--standalone', /cluster mode needs --kubeconfig/);
    assertConfigError(() => load([], { FARM_STANDALONE: 'false' }), 'FARM_STANDALONE', /cluster mode needs/);
    assert.equal(load(['--standalone=false'], { KUBERNETES_SERVICE_HOST: 'h' }, tokenPresent).standalone, false);
  });

  it('tls cert and key must be given together', () => {
    assertConfigError(() => load(['--tls-cert-file=/a']), '--tls-cert-file', /--tls-key-file .* must be given too/);
    assertConfigError(() => load(['--tls-key-file=/a']), '--tls-key-file', /--tls-cert-file .* must be given too/);
    assertConfigError(() => load([], { FARM_TLS_KEY_FILE: '/a' }), 'FARM_TLS_KEY_FILE');
    assert.equal(load(['--tls-cert-file=/a'], { FARM_TLS_KEY_FILE: '/b' }).tlsFilesExplicit, true);
  });
});

describe('usage', () => {
  it('lists every flag with its env var', () => {
    const u = usage();
    for (const o of OPTIONS) {
      assert.ok(u.includes(o.flag), `usage misses ${o.flag}`);
      assert.ok(u.includes(o.env), `usage misses ${o.env}`);
    }
    assert.ok(u.includes('--help'));
    assert.ok(u.startsWith('Usage: farm-apiserver'));
  });
});
