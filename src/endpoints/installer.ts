// Routes of one resource (endpoints/installer.go): a handler per verb, each given the resource's scope;
// a declared status subresource gets /status routes whose scope's storage is the status store.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError, errors } from '../apimachinery/status.js';
import { hasStatusSubresource, type ResourceDefinition } from '../registry/resource.js';
import { createResource } from './handlers/create.js';
import { deleteCollection, deleteResource } from './handlers/delete.js';
import { getResource, listResource } from './handlers/get.js';
import { patchResource } from './handlers/patch.js';
import { RequestScope, type Req, type RestOptions } from './handlers/scope.js';
import { updateResource } from './handlers/update.js';

export type { RestOptions } from './handlers/scope.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Handler = (scope: RequestScope, req: Req, reply: FastifyReply) => Promise<unknown>;

export function registerResourceRoutes(app: FastifyInstance, def: ResourceDefinition, opts: RestOptions): void {
  const scope = new RequestScope(def, opts);
  const base = `/apis/${def.group}/${def.version}`;
  const coll = def.namespaced ? `${base}/namespaces/:namespace/${def.plural}` : `${base}/${def.plural}`;
  const item = `${coll}/:name`;
  const watchColl = def.namespaced ? `${base}/watch/namespaces/:namespace/${def.plural}` : `${base}/watch/${def.plural}`;
  const routeIn = (s: RequestScope) => (method: Method, url: string, fn: Handler) =>
    app.route({ method, url, handler: ((req: Req, reply: FastifyReply) => fn(s, req, reply)) as never });
  const route = routeIn(scope);
  const list = (s: RequestScope, req: Req, reply: FastifyReply) => listResource(s, req, reply, false);
  const watch = (s: RequestScope, req: Req, reply: FastifyReply) => listResource(s, req, reply, true);

  // Every verb has its route: a resource without the verb answers 405 naming it (its handler checks).
  route('GET', coll, list);
  route('POST', coll, createResource);
  route('DELETE', coll, deleteCollection);
  route('GET', item, getResource);
  route('PUT', item, updateResource);
  route('PATCH', item, patchResource);
  route('DELETE', item, deleteResource);
  route('GET', watchColl, watch);
  route('GET', `${watchColl}/:name`, watch);
  if (def.namespaced) route('GET', `${base}/${def.plural}`, list);
  if (def.namespaced) route('GET', `${base}/watch/${def.plural}`, watch);
  const notAllowed = async () => { throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'); };
  route('PUT', coll, notAllowed);
  route('PATCH', coll, notAllowed);
  route('POST', item, notAllowed);
  if (hasStatusSubresource(def)) registerStatusRoutes(def, `${item}/status`, `${watchColl}/:name/status`, routeIn, opts);
}

/**
 * GET, PUT and PATCH of /status with the verb handlers of the main resource over the status store
 * (upstream installs only those for a subresource). POST and DELETE reach the create and delete
 * handlers, which answer 405 "<verb> is not supported" as the store has neither (the CRD handler's answer).
 */
function registerStatusRoutes(def: ResourceDefinition, url: string, watchUrl: string, routeIn: (s: RequestScope) => (method: Method, url: string, fn: Handler) => unknown, opts: RestOptions): void {
  const status = def.subresourceRest?.status;
  if (!status) throw new Error(`${def.plural}: the status subresource is declared but has no storage (subresourceRest.status)`);
  const scope = new RequestScope({ ...def, rest: status }, opts);
  const route = routeIn(scope);
  route('GET', url, getResource);
  route('PUT', url, updateResource);
  route('PATCH', url, patchResource);
  route('POST', url, createResource);
  route('DELETE', url, deleteResource);
  route('GET', watchUrl, async () => { throw errors.methodNotAllowed('watch', scope.gr); });
}
