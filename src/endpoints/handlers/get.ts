// GET of one object and LIST of a collection (handlers/get.go); a list with watch=true is a watch.
import type { FastifyReply } from 'fastify';
import { writeChunks } from '../bodyBuilder.js';
import { one, parseListOptions } from '../listOptions.js';
import { negotiate, type Output } from '../negotiation.js';
import { clientGone } from '../protocol.js';
import { renderListBody } from '../render.js';
import { parseIncludeObject } from '../table.js';
import type { ListMeta } from '../../apimachinery/types.js';
import type { ListResult } from '../../storage/interfaces.js';
import { serializeAttributes, type Req, type RequestScope } from './scope.js';
import { inSpan } from '../../apimachinery/tracing.js';
import { serveWatch } from './watch.js';

export async function getResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  const name = scope.nameOf(req);
  // GetOptions.resourceVersion must parse, and one ahead of this server waits for it (then 504), as the watch cache does.
  const entry = await rest.get(scope.context(req), name, one(req.query, 'resourceVersion') ?? '');
  return scope.responder(req)(reply, 200, entry);
}

export async function listResource(scope: RequestScope, req: Req, reply: FastifyReply, watchPath: boolean) {
  const rest = scope.rest();
  const listOpts = parseListOptions(req.query, watchPath);
  if (watchPath && req.params.name) {
    listOpts.fieldSelector = [listOpts.fieldSelector, `metadata.name=${req.params.name}`].filter(Boolean).join(',');
  }
  const ctx = scope.context(req);
  if (listOpts.watch) return serveWatch(scope, req, reply, ctx, listOpts);
  const out = negotiate(req.headers.accept, 'list');
  const list = await rest.list(ctx, listOpts);
  // A client gone while this waited (authorization, a fresh-enough cache) or one that sent the request
  // and reset it at once (HTTP/2 rapid reset): nothing to build a LIST for. One turn of the event loop
  // first, so that resets already on the wire are read before the work starts.
  await new Promise<void>((r) => setImmediate(r));
  if (clientGone(req.raw)) { reply.hijack(); return reply; }
  await inSpan('SerializeObject', () => serializeAttributes(req, reply, out, 'list'), () => sendList(scope, req, reply, list, out));
  return reply;
}

/** Returns once the body is handed over (not the reply: a thenable that waits for the client). */
async function sendList(scope: RequestScope, req: Req, reply: FastifyReply, list: ListResult, out: Output): Promise<void> {
  // Bytes, not a string: Node would otherwise measure, flatten and encode the whole body again on send.
  const r = renderListBody(scope.def, list.items, listMetaOf(list), out, parseIncludeObject(one(req.query, 'includeObject')));
  if (r.yaml) { reply.code(200).type(r.contentType).send(await scope.body(r)); return; }
  if (Buffer.isBuffer(r.body)) { reply.code(200).type(r.contentType).send(r.body); return; }
  // A large list: written a chunk at a time, as fast as the client takes them (bodyBuilder.ts).
  reply.hijack();
  reply.raw.writeHead(200, { 'Content-Type': r.contentType });
  await writeChunks(reply.raw, r.body);
}

export function listMetaOf(list: Pick<ListResult, 'resourceVersion' | 'resourceVersionText' | 'continue' | 'remainingItemCount'>): ListMeta {
  const meta: ListMeta = { resourceVersion: list.resourceVersionText ?? String(list.resourceVersion) };
  if (list.continue) meta.continue = list.continue;
  if (list.remainingItemCount !== undefined) meta.remainingItemCount = list.remainingItemCount;
  return meta;
}
