// Child process: the watch peer. A plain node:https server (same key and certificate) that keeps
// every GET /watch response open and writes each line POSTed to /publish to all of them, then
// acknowledges the POST: the least a server can do to fan the same bytes out over the same streams.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { join } from 'node:path';
import { cpuTotalMs, serveIpc } from '../lib/common.js';

const dir = process.argv[2]!;
const watchers = new Set<ServerResponse>();
const server = createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')) }, (req, res) => {
  if (req.method === 'GET' && req.url?.startsWith('/watch')) {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    watchers.add(res);
    res.on('close', () => watchers.delete(res));
    return;
  }
  if (req.method === 'POST' && req.url === '/publish') {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { body += c; });
    req.on('end', () => {
      for (const w of watchers) w.write(body);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 2 }).end('{}');
    });
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  serveIpc({ cpu: () => cpuTotalMs(), watchers: () => watchers.size }, { port: (server.address() as { port: number }).port });
});
