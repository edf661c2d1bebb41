// PUT of a whole object (handlers/update.go): the registry checks it against the stored one.
import type { FastifyReply } from 'fastify';
import { errors } from '../../apimachinery/status.js';
import { requireMediaType } from '../bodies.js';
import { parseWriteOptions } from '../listOptions.js';
import { OBJECT_MEDIA_TYPES } from '../mediaTypes.js';
import type { Req, RequestScope } from './scope.js';

export async function updateResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.update) throw errors.methodNotAllowed('update', scope.gr);
  const respond = scope.responder(req);
  requireMediaType(req, OBJECT_MEDIA_TYPES);
  const opts = parseWriteOptions(req.query, 'UpdateOptions');
  const ctx = scope.context(req);
  const object = scope.decodeBody(req.body, ctx.namespace);
  const name = scope.nameOf(req);
  scope.checkName(object, name);
  const findings = req.duplicateFields ?? [];
  const manager = scope.managerOf(req, opts.fieldManager);
  const { entry, warnings } = await rest.update(ctx, name, async () => ({ object, findings }), { ...opts, fieldManager: manager, patch: false });
  return respond(reply, 200, entry, warnings);
}
