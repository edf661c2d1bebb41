// Who is calling and whether they may: the seams between the HTTP layer and authn/authz backends.
import type { FastifyRequest } from 'fastify';
import type { RequestInfo } from '../../endpoints/requestInfo.js';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** undefined = no credentials this authenticator understands; throws ApiError 401 for bad ones. */
export interface Authenticator {
  authenticate(req: FastifyRequest): Promise<UserInfo | undefined>;
}

export interface Decision { allowed: boolean; reason?: string }

export interface Authorizer {
  authorize(user: UserInfo, info: RequestInfo, req: FastifyRequest): Promise<Decision>;
}

export const anonymous: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'], extra: {} };
