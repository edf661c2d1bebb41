// The REST verbs, wired from resource definitions. Knows Kubernetes semantics, nothing of any resource.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Entry } from '../storage/cacher/objectCache.js';
import { objectKey } from '../storage/cacher/objectCache.js';
import { mediaTypeOf, OBJECT_MEDIA_TYPES, PATCH_MEDIA_TYPES, requireMediaType } from './bodies.js';
import { parseDeleteOptions } from './deleteOptions.js';
import { one, parseListOptions, parseWriteOptions, type Query, type WriteOptions } from './listOptions.js';
import { bumpGeneration, metaDecodeError, prepareForCreate, prepareForUpdate, validateMeta, validateMetaUpdate } from '../apimachinery/meta.js';
import { negotiate, type Target } from './negotiation.js';
import { applyMergePatch, jsonPatch, strictDecodingError } from '../apimachinery/patch.js';
import { writeChunks } from './bodyBuilder.js';
import { clientGone } from './protocol.js';
import { listEntries, selection, waitUntilFresh } from './query.js';
import { renderList, renderListBody, renderObject, type Renderable, type Rendered } from './render.js';
import { apiVersionOf, groupResource, type DeleteOptions, type ResourceDefinition } from '../registry/resource.js';
import { ApiError, errors, FieldError, GoLiteral, type GroupResource } from '../apimachinery/status.js';
import { parseIncludeObject } from './table.js';
import type { KubeObject } from '../apimachinery/types.js';
import { validateObject } from '../registry/validation.js';
import { Pacer } from '../apimachinery/pacer.js';
import { Warnings } from './warnings.js';
import type { YamlCodec } from '../apimachinery/yamlCodec.js';
import { serveWatch, type WatchSettings } from './watch.js';

export interface RestOptions {
  watch: WatchSettings;
  /** Writes YAML responses off the event loop. */
  yaml: YamlCodec;
  now?: () => Date;
  /** Names for generateName (default: prefix + 5 random characters); tests make collisions with it. */
  generateName?: (prefix: string) => string;
  /** Admission before a create (e.g. namespace lifecycle); throws ApiError to refuse. */
  admitCreate?: (gr: GroupResource, namespace: string | undefined, name: string) => Promise<void>;
}

type Req = FastifyRequest<{ Params: { namespace?: string; name?: string }; Querystring: Query }>;


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

/** maxNameGenerationCreateAttempts: 1 million names per prefix with a 0.1% chance of any conflict. */
const MAX_NAME_GENERATION_ATTEMPTS = 8;

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
    return this.responder(req, target)(reply, code, item);
  }

  /**
   * Negotiates the response before anything is written (406 and a bad includeObject come first, as
   * upstream's handlers negotiate first); what it returns cannot fail, so a committed write is answered.
   */
  private responder(req: Req, target: Target = 'object') {
    const out = negotiate(req.headers.accept, target);
    const includeObject = parseIncludeObject(one(req.query, 'includeObject'));
    return async (reply: FastifyReply, code: number, item: Renderable, warnings?: Warnings) => {
      const r = renderObject(this.def, item, out, includeObject);
      const body = r.yaml ? await this.body(r) : r.body;
      if (!warnings?.size) return reply.code(code).type(r.contentType).send(body);
      // Node writes the header block in the body's encoding when the body is a string; a Buffer body
      // makes it Latin-1, which keeps the warnings' UTF-8 bytes as they are (see warnings.ts).
      reply.header('Warning', warnings.headers());
      return reply.code(code).type(r.contentType).send(Buffer.from(body));
    };
  }

  private async body(r: Rendered): Promise<string> {
    return r.yaml ? this.opts.yaml.encode(r.body) : r.body;
  }

  async get(req: Req, reply: FastifyReply) {
    const cache = this.provider().cache;
    const name = this.nameOf(req);
    // GetOptions.resourceVersion must parse, and one ahead of the cache waits for it (then 504), as the watch cache does.
    const rv = one(req.query, 'resourceVersion');
    if (rv) await waitUntilFresh(cache, rv);
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
    const { items, meta } = await listEntries(cache, sel, listOpts);
    // A client gone while this waited (authorization, a fresh-enough cache) or one that sent the request
    // and reset it at once (HTTP/2 rapid reset): nothing to build a LIST for. One turn of the event loop
    // first, so that resets already on the wire are read before the work starts.
    await new Promise<void>((r) => setImmediate(r));
    if (clientGone(req.raw)) { reply.hijack(); return reply; }
    // Bytes, not a string: Node would otherwise measure, flatten and encode the whole body again on send.
    const r = renderListBody(this.def, items, meta, out, parseIncludeObject(one(req.query, 'includeObject')));
    if (r.yaml) return reply.code(200).type(r.contentType).send(await this.body(r));
    if (Buffer.isBuffer(r.body)) return reply.code(200).type(r.contentType).send(r.body);
    // A large list: written a chunk at a time, as fast as the client takes them (bodyBuilder.ts).
    reply.hijack();
    reply.raw.writeHead(200, { 'Content-Type': r.contentType });
    await writeChunks(reply.raw, r.body);
    return reply;
  }

  async create(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.create) throw errors.methodNotAllowed('create', this.gr);
    const respond = this.responder(req);
    requireMediaType(req, OBJECT_MEDIA_TYPES);
    const wo = parseWriteOptions(req.query, 'CreateOptions');
    const namespace = this.namespaceOf(req);
    const pace = new Pacer();
    const body = this.decodeBody(req.body, namespace);
    await pace.breathe();
    // Admission (namespace lifecycle) runs before the strategy's validation, as upstream orders them.
    await this.opts.admitCreate?.(this.gr, namespace, body.metadata.name ?? '');
    // A generated name that is taken is drawn again, up to 8 times (store.go's createWithGenerateNameRetry).
    const generated = !body.metadata.name && !!body.metadata.generateName;
    for (let attempt = 1; ; attempt++) {
      const warnings = new Warnings();
      const obj = await this.validated(pace, warnings, prepareForCreate(body, this.now(), this.opts.generateName), wo, undefined, req.duplicateFields);
      await pace.breathe();
      try {
        const entry = await provider.create(obj, { dryRun: wo.dryRun });
        return respond(reply, 201, entry, warnings);
      } catch (e) {
        if (!generated || attempt >= MAX_NAME_GENERATION_ATTEMPTS || !(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
      }
    }
  }

  async update(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.update) throw errors.methodNotAllowed('update', this.gr);
    const respond = this.responder(req);
    requireMediaType(req, OBJECT_MEDIA_TYPES);
    const wo = parseWriteOptions(req.query, 'UpdateOptions');
    const body = this.decodeBody(req.body, this.namespaceOf(req));
    const name = this.nameOf(req);
    this.checkName(body, name);
    let warnings = new Warnings();
    const pace = new Pacer();
    const { entry } = await provider.update(this.namespaceOf(req), name, async (current) => {
      warnings = new Warnings(); // the try-update may run again: only the last attempt's warnings count
      // As the generic registry's Update: a missing object is NotFound first (no create-on-update), then a PUT
      // without resourceVersion is Invalid, worded with the resource as kind and Go's %#v of uint64(0).
      if (!current) throw errors.notFound(this.gr, name);
      if (!body.metadata.resourceVersion) {
        throw errors.invalid({ group: this.def.group, kind: this.def.plural }, name,
          [FieldError.invalid('metadata.resourceVersion', new GoLiteral('0x0'), 'must be specified for an update')]);
      }
      return this.updated(pace, warnings, body, current, wo, name, req.duplicateFields);
    }, { dryRun: wo.dryRun });
    return respond(reply, 200, entry, warnings);
  }

  async patch(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.update) throw errors.methodNotAllowed('patch', this.gr);
    const respond = this.responder(req);
    const contentType = mediaTypeOf(req.headers['content-type']);
    if (!PATCH_MEDIA_TYPES.includes(contentType)) throw errors.unsupportedMediaType(PATCH_MEDIA_TYPES);
    const wo = parseWriteOptions(req.query, 'PatchOptions');
    if (one(req.query, 'force') !== undefined) {
      throw errors.invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [FieldError.forbidden('force', 'may not be specified for non-apply patch')]);
    }
    const name = this.nameOf(req);
    const namespace = this.namespaceOf(req);
    let warnings = new Warnings();
    const pace = new Pacer();
    const { entry } = await provider.update(namespace, name, async (current) => {
      if (!current) throw errors.notFound(this.gr, name);
      warnings = new Warnings();
      const fv = { fieldValidation: wo.fieldValidation };
      // Findings about the patch itself come first, then unknown fields of the patched object (as upstream).
      const isJsonPatch = contentType === 'application/json-patch+json';
      const { object: patched, strictErrors } = isJsonPatch
        ? jsonPatch(current, req.body, fv)
        : { object: applyMergePatch(current, req.body, fv), strictErrors: [] as string[] };
      const duplicates = wo.fieldValidation === 'Ignore' ? [] : (req.duplicateFields ?? []).map((d) => (isJsonPatch ? `json patch ${d}` : d));
      await pace.breathe();
      const body = this.decodeBody(patched, namespace);
      this.checkName(body, name);
      return this.updated(pace, warnings, body, current, wo, name, [...duplicates, ...strictErrors], true);
    }, { dryRun: wo.dryRun });
    return respond(reply, 200, entry, warnings);
  }

  async delete(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.delete) throw errors.methodNotAllowed('delete', this.gr);
    const respond = this.responder(req);
    const { options, dryRun } = this.deleteOptions(req);
    const { entry, deleted } = await provider.delete(this.namespaceOf(req), this.nameOf(req), options, { dryRun });
    // handlers.DeleteResource: 202 only when the object is still there and the client asked orphanDependents=false.
    return respond(reply, !deleted && options.orphanDependents === false ? 202 : 200, entry);
  }

  async deleteCollection(req: Req, reply: FastifyReply) {
    const provider = this.provider();
    if (!provider.delete) throw errors.methodNotAllowed('deletecollection', this.gr);
    const out = negotiate(req.headers.accept, 'list');
    const { options, dryRun } = this.deleteOptions(req);
    const listOpts = parseListOptions(req.query);
    const sel = selection(this.def, this.namespaceOf(req), { ...listOpts, limit: 0, continue: '' });
    const { items, meta } = await listEntries(provider.cache, sel, { ...listOpts, limit: 0, continue: '' });
    const deleted: Entry[] = [];
    for (const e of items) {
      try {
        const o = e.object.metadata;
        deleted.push((await provider.delete(o.namespace, o.name!, options, { dryRun })).entry);
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err; // deleted meanwhile
      }
    }
    const r = renderList(this.def, deleted, { resourceVersion: dryRun ? meta.resourceVersion : String(provider.cache.resourceVersion) }, out, 'Metadata');
    return reply.code(200).type(r.contentType).send(await this.body(r));
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
  private async updated(pace: Pacer, warnings: Warnings, body: KubeObject, current: KubeObject | undefined, wo: WriteOptions, name: string, findings: string[] | undefined, isPatch = false): Promise<KubeObject> {
    if (!current) throw errors.notFound(this.gr, name);
    const rv = body.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) {
      throw errors.conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const next = prepareForUpdate(body, current);
    const valid = await this.validated(pace, warnings, next, wo, current, findings, isPatch);
    await pace.breathe();
    return bumpGeneration(valid, current);
  }

  /**
   * Schema + metadata validation; decoding findings (duplicate and unknown fields) per fieldValidation:
   * Strict → 400 (422 for a patch), Warn → collected as warnings, Ignore → dropped.
   */
  private async validated(pace: Pacer, warnings: Warnings, obj: KubeObject, wo: WriteOptions, old: KubeObject | undefined, bodyFindings: string[] | undefined, isPatch = false): Promise<KubeObject> {
    await pace.breathe();
    const result = validateObject(this.def, obj);
    await pace.breathe();
    if (wo.fieldValidation !== 'Ignore') {
      const findings = [...(bodyFindings ?? []), ...result.unknownFields.map((f) => `unknown field "${f}"`)];
      if (findings.length && wo.fieldValidation === 'Strict') {
        // A patch's strict failure is a 422 on the patch; a create/update body's is a 400 decoding error.
        if (isPatch) throw strictDecodingError(obj, findings);
        throw errors.badRequest(`${this.def.kind} in version "${this.def.version}" cannot be handled as a ${this.def.kind}: strict decoding error: ${findings.join(', ')}`);
      }
      warnings.addAll(findings);
    }
    const fieldErrors = [...result.errors, ...validateMeta(obj.metadata, this.def.namespaced)];
    await pace.breathe();
    if (old) fieldErrors.push(...validateMetaUpdate(obj.metadata, old.metadata));
    if (fieldErrors.length || !result.value) {
      throw errors.invalid(this.gk, obj.metadata.name ?? '', fieldErrors.length ? fieldErrors : [FieldError.invalid('', '', 'invalid object')]);
    }
    return result.value;
  }

  private deleteOptions(req: Req): { options: DeleteOptions; dryRun: boolean } {
    requireMediaType(req, OBJECT_MEDIA_TYPES);
    return parseDeleteOptions(req.body, req.query, req.fractionLiterals);
  }
}
