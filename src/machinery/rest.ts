// The REST verbs, wired from resource definitions. Knows Kubernetes semantics, nothing of any resource.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Entry } from '../storage/objectCache.js';
import { objectKey } from '../storage/objectCache.js';
import { one, parseListOptions, parseWriteOptions, type Query, type WriteOptions } from './listOptions.js';
import { bumpGeneration, metaDecodeError, prepareForCreate, prepareForUpdate, validateMeta, validateMetaUpdate } from './meta.js';
import { negotiate, type Target } from './negotiation.js';
import { applyMergePatch, jsonPatch, strictDecodingError } from './patch.js';
import { listEntries, selection } from './query.js';
import { renderList, renderObject, type Renderable } from './render.js';
import { apiVersionOf, groupResource, type DeleteOptions, type ResourceDefinition } from './resource.js';
import { ApiError, errors, FieldError, GoLiteral, type GroupResource } from './status.js';
import { parseIncludeObject } from './table.js';
import type { KubeObject } from './types.js';
import { validateObject } from './validation.js';
import { serveWatch, type WatchSettings } from './watch.js';

export interface RestOptions {
  watch: WatchSettings;
  now?: () => Date;
  /** Admission before a create (e.g. namespace lifecycle); throws ApiError to refuse. */
  admitCreate?: (gr: GroupResource, namespace: string | undefined, name: string) => Promise<void>;
}

type Req = FastifyRequest<{ Params: { namespace?: string; name?: string }; Querystring: Query }>;

const patchTypes = ['application/json-patch+json', 'application/merge-patch+json'];

export function registerResourceRoutes(app: FastifyInstance, def: ResourceDefinition, opts: RestOptions): void {
  const h = new Handlers(def, opts);
  const base = `/apis/${def.group}/${def.version}`;
  const coll = def.namespaced ? `${base}/namespaces/:namespace/${def.plural}` : `${base}/${def.plural}`;
  const item = `${coll}/:name`;
  const watchColl = def.namespaced ? `${base}/watch/namespaces/:namespace/${def.plural}` : `${base}/watch/${def.plural}`;
  const route = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, fn: (req: Req, reply: FastifyReply) => Promise<unknown>) =>
    app.route({ method, url, handler: fn as never });

  route('GET', coll, (req, reply) => h.list(req, reply, false));
  route('POST', coll, (req, reply) => h.create(req, reply));
  route('DELETE', coll, (req, reply) => h.deleteCollection(req, reply));
  route('GET', item, (req, reply) => h.get(req, reply));
  route('PUT', item, (req, reply) => h.update(req, reply));
  route('PATCH', item, (req, reply) => h.patch(req, reply));
  route('DELETE', item, (req, reply) => h.delete(req, reply));
  route('GET', watchColl, (req, reply) => h.list(req, reply, true));
  route('GET', `${watchColl}/:name`, (req, reply) => h.list(req, reply, true));
  if (def.namespaced) route('GET', `${base}/${def.plural}`, (req, reply) => h.list(req, reply, false));
  if (def.namespaced) route('GET', `${base}/watch/${def.plural}`, (req, reply) => h.list(req, reply, true));
  const notAllowed = async () => { throw new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'); };
  route('PUT', coll, notAllowed);
  route('PATCH', coll, notAllowed);
  route('POST', item, notAllowed);
}

class Handlers {
  private readonly gr;
  private readonly gk;
  private readonly now: () => Date;

  constructor(private readonly def: ResourceDefinition, private readonly opts: RestOptions) {
    this.gr = groupResource(def);
    this.gk = { group: def.group, kind: def.kind };
    this.now = opts.now ?? (() => new Date());
  }

  private provider() {
    const why = this.def.provider.unavailable?.();
    if (why) throw errors.serviceUnavailable(why);
    return this.def.provider;
  }

  /** undefined = all namespaces (/apis/g/v/llamas); an empty segment ("namespaces//llamas") must not widen to that. */
  private namespaceOf(req: Req): string | undefined {
    if (!this.def.namespaced) return undefined;
    if (req.params.namespace === '') throw errors.pathNotFound();
    return req.params.namespace;
  }

  private nameOf(req: Req): string {
    if (!req.params.name) throw errors.pathNotFound();
    return req.params.name;
  }

  private send(req: Req, reply: FastifyReply, code: number, item: Renderable, target: Target = 'object') {
    const out = negotiate(req.headers.accept, target);
    const r = renderObject(this.def, item, out, parseIncludeObject(one(req.query, 'includeObject')));
    return reply.code(code).type(r.contentType).send(r.body);
  }

  async get(req: Req, reply: FastifyReply) {
    const cache = this.provider().cache;
    const name = this.nameOf(req);
    const entry = cache.get(objectKey(this.namespaceOf(req), name));
    if (!entry) throw errors.notFound(this.gr, name);
    return this.send(req, reply, 200, entry);
  }

  async list(req: Req, reply: FastifyReply, watchPath: boolean) {
    const cache = this.provider().cache;
    const listOpts = parseListOptions(req.query, watchPath);
    if (watchPath && req.params.name) {
      listOpts.fieldSelector = [listOpts.fieldSelector, `metadata.name=${req.params.name}`].filter(Boolean).join(',');
    }
    const sel = selection(this.def, this.namespaceOf(req), listOpts);
    if (listOpts.watch) {
      const out = negotiate(req.headers.accept, 'watch');
      return serveWatch(req, reply, { def: this.def, cache, sel, listOpts, out, includeObject: parseIncludeObject(one(req.query, 'includeObject')), settings: this.opts.watch });
    }
    const out = negotiate(req.headers.accept, 'list');
    const { items, meta } = listEntries(cache, sel, listOpts);
    const r = renderList(this.def, items, meta, out, parseIncludeObject(one(req.query, 'includeObject')));
    return reply.code(200).type(r.contentType).send(r.body);
  }

  async create(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.create) throw errors.methodNotAllowed('create', this.gr);
    const wo = parseWriteOptions(req.query, 'CreateOptions');
    const namespace = this.namespaceOf(req);
    const body = this.decodeBody(req.body, namespace);
    // Admission (namespace lifecycle) runs before the strategy's validation, as upstream orders them.
    await this.opts.admitCreate?.(this.gr, namespace, body.metadata.name ?? '');
    const obj = this.validated(reply, prepareForCreate(body, this.now()), wo, undefined);
    const entry = await provider.create(obj, { dryRun: wo.dryRun });
    return this.send(req, reply, 201, entry);
  }

  async update(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.update) throw errors.methodNotAllowed('update', this.gr);
    const wo = parseWriteOptions(req.query, 'UpdateOptions');
    const body = this.decodeBody(req.body, this.namespaceOf(req));
    const name = this.nameOf(req);
    this.checkName(body, name);
    const { entry } = await provider.update(this.namespaceOf(req), name, (current) => {
      // As the generic registry's Update: a missing object is NotFound first (no create-on-update), then a PUT
      // without resourceVersion is Invalid, worded with the resource as kind and Go's %#v of uint64(0).
      if (!current) throw errors.notFound(this.gr, name);
      if (!body.metadata.resourceVersion) {
        throw errors.invalid({ group: this.def.group, kind: this.def.plural }, name,
          [FieldError.invalid('metadata.resourceVersion', new GoLiteral('0x0'), 'must be specified for an update')]);
      }
      return this.updated(reply, body, current, wo, name);
    }, { dryRun: wo.dryRun });
    return this.send(req, reply, 200, entry);
  }

  async patch(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.update) throw errors.methodNotAllowed('patch', this.gr);
    const contentType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (!patchTypes.includes(contentType)) throw errors.unsupportedMediaType(patchTypes);
    const wo = parseWriteOptions(req.query, 'PatchOptions');
    if (one(req.query, 'force') !== undefined) {
      throw errors.invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [FieldError.forbidden('force', 'may not be specified for non-apply patch')]);
    }
    const name = this.nameOf(req);
    const namespace = this.namespaceOf(req);
    const { entry } = await provider.update(namespace, name, (current) => {
      if (!current) throw errors.notFound(this.gr, name);
      const fv = { fieldValidation: wo.fieldValidation };
      // Findings about the patch itself come first, then unknown fields of the patched object (as upstream).
      const { object: patched, strictErrors } = contentType === 'application/json-patch+json'
        ? jsonPatch(current, req.body, fv)
        : { object: applyMergePatch(current, req.body, fv), strictErrors: [] as string[] };
      const body = this.decodeBody(patched, namespace);
      this.checkName(body, name);
      return this.updated(reply, body, current, wo, name, strictErrors);
    }, { dryRun: wo.dryRun });
    return this.send(req, reply, 200, entry);
  }

  async delete(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.delete) throw errors.methodNotAllowed('delete', this.gr);
    const { options, dryRun } = this.deleteOptions(req);
    const { entry, deleted } = await provider.delete(this.namespaceOf(req), this.nameOf(req), options, { dryRun });
    // handlers.DeleteResource: 202 only when the object is still there and the client asked orphanDependents=false.
    return this.send(req, reply, !deleted && options.orphanDependents === false ? 202 : 200, entry);
  }

  async deleteCollection(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.delete) throw errors.methodNotAllowed('deletecollection', this.gr);
    const { options, dryRun } = this.deleteOptions(req);
    const listOpts = parseListOptions(req.query);
    const sel = selection(this.def, this.namespaceOf(req), { ...listOpts, limit: 0, continue: '' });
    const { items, meta } = listEntries(provider.cache, sel, { ...listOpts, limit: 0, continue: '' });
    const deleted: Entry[] = [];
    for (const e of items) {
      try {
        const o = e.object.metadata;
        deleted.push((await provider.delete(o.namespace, o.name!, options, { dryRun })).entry);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err; // deleted meanwhile
      }
    }
    const out = negotiate(req.headers.accept, 'list');
    const r = renderList(this.def, deleted, { resourceVersion: dryRun ? meta.resourceVersion : String(provider.cache.resourceVersion) }, out, 'Metadata');
    return reply.code(200).type(r.contentType).send(r.body);
  }

  /** A body must be this kind's object; its namespace defaults to the request's and may not differ. */
  private decodeBody(body: unknown, namespace: string | undefined): KubeObject {
    const what = `${this.def.kind} in version "${this.def.version}" cannot be handled as a ${this.def.kind}`;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw errors.badRequest(`${what}: the request body must be a JSON object`);
    }
    const obj = body as Partial<KubeObject>;
    const apiVersion = apiVersionOf(this.def);
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
      throw errors.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== this.def.kind) {
      throw errors.badRequest(`${what}: the kind in the data (${String(obj.kind)}) does not match the expected kind (${this.def.kind})`);
    }
    const metadata = { ...(obj.metadata ?? {}) };
    if (typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) {
      if (obj.metadata !== undefined) throw errors.badRequest(`${what}: metadata must be an object`);
    }
    const decodeError = metaDecodeError(metadata);
    if (decodeError) throw errors.badRequest(`${what}: ${decodeError}`);
    // No server-side apply yet: the server owns managedFields and keeps none a client sends.
    delete metadata.managedFields;
    if (this.def.namespaced) {
      if (metadata.namespace && metadata.namespace !== namespace) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
    }
    return { ...obj, apiVersion, kind: this.def.kind, metadata: this.def.namespaced ? { ...metadata, namespace } : { ...metadata } } as KubeObject;
  }

  private checkName(body: KubeObject, name: string) {
    if (body.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${body.metadata.name ?? ''}) does not match the name on the URL (${name})`);
    }
  }

  /** Optimistic concurrency first (as upstream), then the new object is prepared and validated. */
  private updated(reply: FastifyReply, body: KubeObject, current: KubeObject | undefined, wo: WriteOptions, name: string, patchFindings?: string[]): KubeObject {
    if (!current) throw errors.notFound(this.gr, name);
    const rv = body.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) {
      throw errors.conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const next = prepareForUpdate(body, current);
    return bumpGeneration(this.validated(reply, next, wo, current, patchFindings), current);
  }

  /** Schema + metadata validation; unknown fields per fieldValidation (Strict → 400, Warn → Warning header). */
  private validated(reply: FastifyReply, obj: KubeObject, wo: WriteOptions, old: KubeObject | undefined, patchFindings?: string[]): KubeObject {
    const result = validateObject(this.def, obj);
    const findings = [...(patchFindings ?? []), ...result.unknownFields.map((f) => `unknown field "${f}"`)];
    if (findings.length) {
      if (wo.fieldValidation === 'Strict') {
        // A patch's strict failure is a 422 on the patch; a create/update body's is a 400 decoding error.
        if (patchFindings) throw strictDecodingError(obj, findings);
        throw errors.badRequest(`${this.def.kind} in version "${this.def.version}" cannot be handled as a ${this.def.kind}: strict decoding error: ${findings.join(', ')}`);
      }
      if (wo.fieldValidation === 'Warn') {
        for (const f of findings) reply.header('Warning', `299 - ${JSON.stringify(f)}`);
      }
    }
    const fieldErrors = [...result.errors, ...validateMeta(obj.metadata, this.def.namespaced)];
    if (old) fieldErrors.push(...validateMetaUpdate(obj.metadata, old.metadata));
    if (fieldErrors.length || !result.value) {
      throw errors.invalid(this.gk, obj.metadata.name ?? '', fieldErrors.length ? fieldErrors : [FieldError.invalid('', '', 'invalid object')]);
    }
    return result.value;
  }

  private deleteOptions(req: Req): { options: DeleteOptions; dryRun: boolean } {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('the request body must be a DeleteOptions object');
    const q = req.query;
    const qGrace = one(q, 'gracePeriodSeconds');
    const options: DeleteOptions = {
      preconditions: body.preconditions as DeleteOptions['preconditions'],
      propagationPolicy: (body.propagationPolicy ?? one(q, 'propagationPolicy')) as DeleteOptions['propagationPolicy'],
      orphanDependents: (body.orphanDependents ?? (one(q, 'orphanDependents') === undefined ? undefined : one(q, 'orphanDependents') === 'true')) as boolean | undefined,
      gracePeriodSeconds: (body.gracePeriodSeconds ?? (qGrace === undefined ? undefined : Number(qGrace))) as number | undefined,
    };
    const bodyDry = Array.isArray(body.dryRun) ? (body.dryRun as string[]) : [];
    const { dryRun } = parseWriteOptions({ ...q, dryRun: [...bodyDry, ...([] as string[]).concat(q.dryRun ?? [])] }, 'DeleteOptions');
    const errs: FieldError[] = [];
    const p = options.propagationPolicy;
    if (p !== undefined && p !== null && !['Foreground', 'Background', 'Orphan'].includes(p)) {
      errs.push(FieldError.notSupported('propagationPolicy', p, ['Foreground', 'Background', 'Orphan', 'nil']));
    }
    if (options.orphanDependents !== undefined && p) {
      errs.push(FieldError.invalid('propagationPolicy', p, 'orphanDependents and deletionPropagation cannot be both set'));
    }
    if (options.gracePeriodSeconds !== undefined && (!Number.isInteger(options.gracePeriodSeconds) || options.gracePeriodSeconds < 0)) {
      errs.push(FieldError.invalid('gracePeriodSeconds', options.gracePeriodSeconds, 'must be greater than or equal to 0'));
    }
    if (errs.length) throw errors.invalid({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', errs);
    return { options, dryRun };
  }
}
