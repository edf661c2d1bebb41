// The start-to-ready peer: a minimal fastify HTTPS server, started like dist/main.js
// (`node bench/procs/helloFastify.mjs --cert-dir <dir> --port <port>`), whose /readyz answers 200
// to the bearer token in <cert-dir>/token.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values } = parseArgs({ options: { 'cert-dir': { type: 'string' }, port: { type: 'string' } } });
const dir = values['cert-dir'];
const token = readFileSync(join(dir, 'token'), 'utf8').trim();
const app = Fastify({ https: { key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')) } });
app.get('/readyz', async (req, reply) => {
  if (req.headers.authorization !== `Bearer ${token}`) return reply.code(401).send('Unauthorized');
  return reply.type('text/plain; charset=utf-8').send('ok');
});
await app.listen({ port: Number(values.port), host: '127.0.0.1' });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
