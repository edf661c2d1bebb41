// DELETE of one object or of a collection (handlers/delete.go).
import type { FastifyReply } from 'fastify';
import { errors } from '../../apimachinery/status.js';
import { requireMediaType } from '../bodies.js';
import { parseDeleteOptions } from '../deleteOptions.js';
import { one, parseListOptions } from '../listOptions.js';
import { OBJECT_MEDIA_TYPES } from '../mediaTypes.js';
import { negotiate } from '../negotiation.js';
import { renderList } from '../render.js';
import { parseIncludeObject } from '../table.js';
import { listMetaOf } from './get.js';
import type { Req, RequestScope } from './scope.js';

function deleteOptions(req: Req) {
  requireMediaType(req, OBJECT_MEDIA_TYPES);
  return parseDeleteOptions(req.body, req.query, req.fractionLiterals);
}

export async function deleteResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.delete) throw errors.methodNotAllowed('delete', scope.gr);
  const respond = scope.responder(req);
  const { options, dryRun } = deleteOptions(req);
  const { entry, deleted } = await rest.delete(scope.context(req), scope.nameOf(req), options, dryRun);
  // handlers.DeleteResource: 202 only when the object is still there and the client asked orphanDependents=false.
  return respond(reply, !deleted && options.orphanDependents === false ? 202 : 200, entry);
}

export async function deleteCollection(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.deleteCollection) throw errors.methodNotAllowed('deletecollection', scope.gr);
  const out = negotiate(req.headers.accept, 'list');
  // Checked before anything is deleted, as the DELETE of one object does (scope.responder).
  const includeObject = parseIncludeObject(one(req.query, 'includeObject'));
  // delete.go DeleteCollection: the list options are decoded and validated before the body.
  const listOpts = parseListOptions(req.query);
  const { options, dryRun } = deleteOptions(req);
  const list = await rest.deleteCollection(scope.context(req), options, dryRun, listOpts);
  const r = renderList(scope.def, list.items, listMetaOf(list), out, includeObject);
  return reply.code(200).type(r.contentType).send(await scope.body(r));
}
