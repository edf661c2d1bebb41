// /healthz, /livez, /readyz with named checks, ?verbose, ?exclude= and /<endpoint>/<check>, as k8s.io/apiserver's healthz.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../../apimachinery/status.js';

export interface HealthCheck {
  name: string;
  /** undefined = healthy; a string says why not (a check that asks another process answers later). */
  check(): string | undefined | Promise<string | undefined>;
}

export interface HealthChecks { livez: HealthCheck[]; readyz: HealthCheck[] }

export const ping: HealthCheck = { name: 'ping', check: () => undefined };

export function registerHealthRoutes(app: FastifyInstance, checks: HealthChecks): void {
  const endpoints: [string, HealthCheck[]][] = [['healthz', checks.readyz], ['livez', checks.livez], ['readyz', checks.readyz]];
  for (const [endpoint, list] of endpoints) {
    app.get(`/${endpoint}`, async (req, reply) => {
      const q = req.query as Record<string, string | string[] | undefined>;
      const exclude = new Set(([] as string[]).concat(q.exclude ?? []));
      return respond(reply, endpoint, list.filter((c) => !exclude.has(c.name)), q.verbose !== undefined);
    });
    app.get(`/${endpoint}/:check`, async (req, reply) => {
      const { check } = req.params as { check: string };
      const c = list.find((x) => x.name === check);
      if (!c) throw errors.pathNotFound(); // a Status, as every error here
      const why = await c.check();
      return why === undefined ? reply.type('text/plain; charset=utf-8').send('ok') : reply.code(500).type('text/plain; charset=utf-8').send(`internal server error: ${why}\n`);
    });
  }
}

async function respond(reply: FastifyReply, endpoint: string, list: HealthCheck[], verbose: boolean) {
  const lines: string[] = [];
  let failed = false;
  // Together: one slow check (etcd's 2 s) does not add to another's.
  const results = await Promise.all(list.map((c) => c.check()));
  for (const [i, c] of list.entries()) {
    const why = results[i];
    if (why === undefined) lines.push(`[+]${c.name} ok`);
    else { failed = true; lines.push(`[-]${c.name} failed: ${why}`); }
  }
  reply.type('text/plain; charset=utf-8').header('X-Content-Type-Options', 'nosniff');
  if (failed) return reply.code(500).send(`${lines.join('\n')}\n${endpoint} check failed\n`);
  return reply.send(verbose ? `${lines.join('\n')}\n${endpoint} check passed\n` : 'ok');
}
