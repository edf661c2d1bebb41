// What every verb handler of one resource shares (handlers.RequestScope): the resource, its storage,
// the request's namespace and name, body decoding, and a response negotiated before any work.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isPrint } from '../../apimachinery/goCompat.js';
import { metaDecodeError } from '../../apimachinery/meta.js';
import { errors, type GroupResource } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { YamlCodec } from '../../apimachinery/yamlCodec.js';
import { apiVersionOf, groupResource, type ResourceDefinition } from '../../registry/resource.js';
import type { RequestContext, RestStorage } from '../../registry/rest.js';
import type { Query } from '../listOptions.js';
import { one } from '../listOptions.js';
import { negotiate, type Output, type Target } from '../negotiation.js';
import { renderObject, type Renderable, type Rendered } from '../render.js';
import { parseIncludeObject } from '../table.js';
import { Warnings } from '../warnings.js';
import type { WatchSettings } from './watch.js';
import { inSpan } from '../../apimachinery/tracing.js';
import { truncatedAuditId } from '../../apimachinery/auditId.js';
import type { Attributes } from '@opentelemetry/api';

export interface RestOptions {
  watch: WatchSettings;
  /** Writes YAML responses off the event loop. */
  yaml: YamlCodec;
  /** Admission before a create (e.g. namespace lifecycle); throws ApiError to refuse. */
  admitCreate?: (gr: GroupResource, namespace: string | undefined, name: string) => Promise<void>;
}

/** The attributes of kube's SerializeObject span (responsewriters/writers.go); the encoder is named by its format. */
export function serializeAttributes(req: FastifyRequest, reply: FastifyReply, out: Output, target: Target): Attributes {
  const as = out.format === 'table' ? 'Table' : out.format === 'metadata' ? (target === 'list' ? 'PartialObjectMetadataList' : 'PartialObjectMetadata') : '';
  const mediaType = as && 'version' in out ? `application/json;as=${as};v=${out.version};g=meta.k8s.io` : out.format === 'yaml' ? 'application/yaml' : 'application/json';
  const auditId = reply.getHeader('audit-id');
  return {
    'audit-id': typeof auditId === 'string' ? truncatedAuditId(auditId) : '', method: req.method, url: req.url.split('?')[0],
    protocol: `HTTP/${req.raw.httpVersion}`, mediaType, encoder: out.format,
  };
}

export type Req = FastifyRequest<{ Params: { namespace?: string; name?: string }; Querystring: Query }>;

export type Respond = (reply: FastifyReply, code: number, item: Renderable, warnings?: readonly string[]) => Promise<FastifyReply>;

export class RequestScope {
  readonly gr: GroupResource;

  constructor(readonly def: ResourceDefinition, readonly opts: RestOptions) {
    this.gr = groupResource(def);
  }

  /** The resource's storage, unless it cannot serve right now (503, before anything else is looked at). */
  rest(): RestStorage {
    const why = this.def.rest.unavailable();
    if (why) throw errors.serviceUnavailable(why);
    return this.def.rest;
  }

  /** undefined = all namespaces (/apis/g/v/llamas); an empty segment ("namespaces//llamas") must not widen to that. */
  namespaceOf(req: Req): string | undefined {
    if (!this.def.namespaced) return undefined;
    if (req.params.namespace === '') throw errors.pathNotFound();
    return req.params.namespace;
  }

  context(req: Req): RequestContext {
    return { namespace: this.namespaceOf(req) };
  }

  nameOf(req: Req): string {
    if (!req.params.name) throw errors.pathNotFound();
    return req.params.name;
  }

  /**
   * Negotiates the response before anything is written (406 and a bad includeObject come first, as
   * upstream's handlers negotiate first); what it returns cannot fail, so a committed write is answered.
   */
  responder(req: Req, target: Target = 'object'): Respond {
    const out = negotiate(req.headers.accept, target);
    const includeObject = parseIncludeObject(one(req.query, 'includeObject'));
    return async (reply, code, item, warningTexts) => {
      // Not the reply inside the span: it is a thenable that settles once the client has the response.
      await inSpan('SerializeObject', () => serializeAttributes(req, reply, out, target), async () => {
        const r = renderObject(this.def, item, out, includeObject);
        const body = r.yaml ? await this.body(r) : r.body;
        if (!warningTexts?.length) { reply.code(code).type(r.contentType).send(body); return; }
        const warnings = new Warnings();
        warnings.addAll(warningTexts);
        // Node writes the header block in the body's encoding when the body is a string; a Buffer body
        // makes it Latin-1, which keeps the warnings' UTF-8 bytes as they are (see warnings.ts).
        reply.header('Warning', warnings.headers());
        reply.code(code).type(r.contentType).send(Buffer.from(body));
      });
      return reply;
    };
  }

  async body(r: Rendered): Promise<string> {
    return r.yaml ? this.opts.yaml.encode(r.body) : r.body;
  }

  /** A body must be this kind's object; its namespace defaults to the request's and may not differ. */
  decodeBody(body: unknown, namespace: string | undefined): KubeObject {
    const def = this.def;
    const what = `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}`;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw errors.badRequest(`${what}: the request body must be a JSON object`);
    }
    const obj = body as Partial<KubeObject>;
    const apiVersion = apiVersionOf(def);
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
      throw errors.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw errors.badRequest(`${what}: the kind in the data (${String(obj.kind)}) does not match the expected kind (${def.kind})`);
    }
    const metadata = { ...(obj.metadata ?? {}) };
    if (typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) {
      if (obj.metadata !== undefined) throw errors.badRequest(`${what}: metadata must be an object`);
    }
    const decodeError = metaDecodeError(metadata);
    if (decodeError) throw errors.badRequest(`${what}: ${decodeError}`);
    // managedFields stay: the field manager reads a request's own ([{}] resets them).
    // ObjectMeta's omitempty: an empty map or list is as if absent (kube decodes metadata into the struct).
    for (const k of ['labels', 'annotations', 'finalizers', 'ownerReferences', 'managedFields'] as const) {
      const v = metadata[k] as unknown;
      if (v !== null && typeof v === 'object' && Object.keys(v).length === 0) delete metadata[k];
    }
    if (def.namespaced && metadata.namespace && metadata.namespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    return { ...obj, apiVersion, kind: def.kind, metadata: def.namespaced ? { ...metadata, namespace } : { ...metadata } } as KubeObject;
  }

  /** managerOrUserAgent: the fieldManager parameter, or the User-Agent's product (printable, at most 128 bytes). */
  managerOf(req: Req, fieldManager: string | undefined): string {
    if (fieldManager) return fieldManager;
    const product = (req.headers['user-agent'] ?? '').split('/')[0];
    let out = '';
    for (const ch of product) {
      if (!isPrint(ch)) continue;
      if (Buffer.byteLength(out + ch) > 128) break;
      out += ch;
    }
    return out;
  }

  checkName(body: KubeObject, name: string): void {
    if (body.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${body.metadata.name ?? ''}) does not match the name on the URL (${name})`);
    }
  }
}
