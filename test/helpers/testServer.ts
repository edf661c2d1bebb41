// Starts the real server (buildServer) on 127.0.0.1 over HTTPS with generated certs, and a small client.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { Http2Client } from './http2Client.js';
import { lineStream } from './lineStream.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allowAll, tokenAuthenticator } from '../../src/server/auth/standalone.js';
import type { Authenticator, UserInfo } from '../../src/server/auth/types.js';
import { errors } from '../../src/apimachinery/status.js';
import type { FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { ensureDevCerts, ensureToken } from '../../src/certs/devCerts.js';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';
import type { ResourceDefinition } from '../../src/registry/resource.js';
import { ping } from '../../src/server/observability/health.js';
import { buildResources } from '../../src/registry/farm/index.js';
import type { ResourceStorage } from '../../src/storage/backend.js';
import { buildServer, type FarmServer, type ServerOptions } from '../../src/server/server.js';

export interface Response { status: number; headers: Record<string, string | string[] | undefined>; body: string; json<T = any>(): T }

export interface TestServer {
  url: string; token: string; caPem: string; dir: string; kubeconfig: string;
  server: FarmServer; resources: ResourceDefinition[];
  /** Backends of the stored resources by plural (when the server built its own resources). */
  stores: Map<string, ResourceStorage>;
  request(method: string, path: string, opts?: { body?: unknown; headers?: Record<string, string>; contentType?: string; token?: string | null }): Promise<Response>;
  /** Opens a streaming GET; lines are pushed as they arrive. */
  stream(path: string, opts?: { headers?: Record<string, string> }): Promise<Stream>;
  close(): Promise<void>;
}

export interface Stream { status: number; lines: string[]; ended: Promise<void>; next(timeoutMs?: number): Promise<string>; close(): void }

export interface TestServerOptions extends Partial<ServerOptions> {
  watchHistory?: number;
  /** Names for generateName; tests make collisions with it. */
  generateName?: (prefix: string) => string;
}

export async function startTestServer(testOpts: TestServerOptions = {}): Promise<TestServer> {
  const { watchHistory, generateName, ...overrides } = testOpts;
  const dir = await mkdtemp(join(tmpdir(), 'farm-test-'));
  const certs = await ensureDevCerts(dir);
  const token = await ensureToken(dir);
  const [key, cert, caPem] = await Promise.all([readFile(certs.keyFile, 'utf8'), readFile(certs.certFile, 'utf8'), readFile(certs.caFile, 'utf8')]);
  const built = overrides.resources ? undefined : buildResources({ watchHistory: watchHistory ?? 1000, garbageCollection: false, generateName });
  const resources = overrides.resources ?? built!.definitions;
  const stores = built?.stores ?? new Map<string, ResourceStorage>();
  const server = buildServer({
    tls: { key, cert }, logger: pino({ level: 'silent' }), resources, standalone: true,
    auth: { authenticators: [tokenAuthenticator(token)], rejectAnonymous: true, authorizer: allowAll },
    health: { livez: [ping], readyz: [ping] },
    watch: { queueCapacity: 1000, bookmarkIntervalMs: 60_000 },
    version: { gitVersion: 'v0.0.0-test' },
    ...overrides,
  });
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (server.app.server.address() as { port: number }).port;
  const url = `https://127.0.0.1:${port}`;
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, { server: url, caPem, token, namespace: 'default' });

  // FARM_TEST_HTTP2=1 runs every suite's calls over one multiplexed HTTP/2 connection instead.
  const h2 = process.env.FARM_TEST_HTTP2 === '1' ? new Http2Client(url, caPem) : undefined;

  const request: TestServer['request'] = (method, path, opts = {}) => new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? token}`;
    let payload: string | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    if (h2) return h2.request(method, path, headers, payload).then(resolve, reject);
    const req = httpsRequest(`${url}${path}`, { method, headers, ca: caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });

  const stream: TestServer['stream'] = (path, opts = {}) => new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, ...opts.headers };
    if (h2) return resolve(h2.stream(path, headers));
    const req = httpsRequest(`${url}${path}`, { method: 'GET', headers, ca: caPem }, (res) => {
      resolve(lineStream(res, res.statusCode ?? 0, () => req.destroy()));
    });
    req.on('error', (e) => { if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e); });
    req.end();
  });

  return {
    url, token, caPem, dir, kubeconfig, server, resources, stores, request, stream,
    async close() { server.endWatches(); h2?.close(); await server.app.close(); await rm(dir, { recursive: true, force: true }); },
  };
}

/** Static bearer tokens, like kube-apiserver's --token-auth-file: the users under test. */
export function tokenUsers(users: Map<string, UserInfo>): Authenticator {
  return {
    async authenticate(req: FastifyRequest) {
      const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
      if (!m) return undefined;
      const u = users.get(m[1]!);
      if (!u) throw errors.unauthorized();
      return u;
    },
  };
}
