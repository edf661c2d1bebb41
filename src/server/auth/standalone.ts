// Standalone mode: one bearer token, generated for this install, grants everything.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { errors } from '../../apimachinery/status.js';
import type { Authenticator, Authorizer, UserInfo } from './types.js';

export const standaloneUser: UserInfo = { username: 'farm-admin', groups: ['system:masters', 'system:authenticated'], extra: {} };

export function tokenAuthenticator(token: string): Authenticator {
  const expected = Buffer.from(token);
  return {
    async authenticate(req: FastifyRequest) {
      const header = req.headers.authorization;
      if (!header) return undefined;
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const given = Buffer.from(m?.[1] ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw errors.unauthorized();
      return standaloneUser;
    },
  };
}

export const allowAll: Authorizer = { authorize: async () => ({ allowed: true }) };
