import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDevCerts, ensureToken } from '../src/certs/devCerts.js';
import { Child } from './lib/common.js';
const dir = await mkdtemp(join(tmpdir(), 'farm-bench-'));
await ensureDevCerts(dir); const token = await ensureToken(dir);
const srv = await Child.start('procs/farmServer.ts', ['--cert-dir', dir]);
const port = srv.info.port;
console.log('port', port, await srv.call('seed', { namespace: 'bench', count: 1 }), await srv.call('seed', { namespace: 'bench-list', count: 1000 }));
console.log(await srv.call('capture', { name: 'one', path: '/apis/farm.example.com/v1alpha/namespaces/bench/llamas/llama-000000' }));
console.log(await srv.call('capture', { name: 'list', path: '/apis/farm.example.com/v1alpha/namespaces/bench-list/llamas' }));
const lg = await Child.start('procs/loadgen.ts');
for (const path of ['/apis/farm.example.com/v1alpha/namespaces/bench/llamas/llama-000000', '/bench/static/one', '/apis/farm.example.com/v1alpha/namespaces/bench-list/llamas', '/bench/static/list']) {
  const c0 = await srv.call('cpu');
  const r = await lg.call('run', { port, path, headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, caFile: join(dir, 'ca.crt'), connections: 16, warmupMs: 1000, durationMs: 3000 });
  const c1 = await srv.call('cpu');
  console.log(path, JSON.stringify(r), 'serverCpu%', (100 * (c1 - c0) / 4050).toFixed(0));
}
await lg.stop(); await srv.stop();
