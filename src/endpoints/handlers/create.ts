// POST of a new object (handlers/create.go): decode, admit, then the registry prepares, validates, stores.
import type { FastifyReply } from 'fastify';
import { Pacer } from '../../apimachinery/pacer.js';
import { errors } from '../../apimachinery/status.js';
import { requireMediaType } from '../bodies.js';
import { parseWriteOptions } from '../listOptions.js';
import { OBJECT_MEDIA_TYPES } from '../mediaTypes.js';
import type { Req, RequestScope } from './scope.js';

export async function createResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.create) throw errors.methodNotAllowed('create', scope.gr);
  const respond = scope.responder(req);
  requireMediaType(req, OBJECT_MEDIA_TYPES);
  const opts = parseWriteOptions(req.query, 'CreateOptions');
  const ctx = scope.context(req);
  const pace = new Pacer();
  const object = scope.decodeBody(req.body, ctx.namespace);
  await pace.breathe();
  // Admission (namespace lifecycle) runs before the strategy's validation, as upstream orders them.
  await scope.opts.admitCreate?.(scope.gr, ctx.namespace, object.metadata.name ?? '');
  const manager = scope.managerOf(req, opts.fieldManager);
  const { entry, warnings } = await rest.create(ctx, { object, findings: req.duplicateFields ?? [] }, { ...opts, fieldManager: manager });
  return respond(reply, 201, entry, warnings);
}
