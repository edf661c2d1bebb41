// Serves the OpenAPI documents: /openapi/v3 (index and one document per group-version, addressed by
// content hash) and /openapi/v2, with ETag caching. Each document is computed once, when first asked for
// (building them all was ~11 ms of every start, before /readyz; kube-apiserver fetches them after).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sha512Hex } from '../discovery/documents.js';
import { etagMatches } from '../discovery/routes.js';
import { parseAccept } from '../negotiation.js';
import type { ResourceDefinition } from '../../registry/resource.js';
import { errors } from '../../apimachinery/status.js';
import { buildOpenApiV2, buildOpenApiV3 } from './builders.js';

interface GroupVersion { group: string; version: string; defs: ResourceDefinition[] }

function groupVersions(defs: ResourceDefinition[]): GroupVersion[] {
  const out = new Map<string, GroupVersion>();
  for (const def of defs) {
    const key = `${def.group}/${def.version}`;
    if (!out.has(key)) out.set(key, { group: def.group, version: def.version, defs: [] });
    out.get(key)!.defs.push(def);
  }
  return [...out.values()];
}

export interface BuiltDocument { json: Buffer; hash: string }

function built(doc: unknown): BuiltDocument {
  const json = Buffer.from(JSON.stringify(doc));
  return { json, hash: sha512Hex(json) };
}

// ---- serving ----

function acceptsJson(accept: string | undefined): boolean {
  return parseAccept(accept).some((r) =>
    (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) || (r.type === '*' && r.subtype === '*'));
}

function sendDoc(req: FastifyRequest, reply: FastifyReply, doc: BuiltDocument, lastModified: string): FastifyReply {
  const etag = `"${doc.hash}"`;
  reply.header('ETag', etag).header('Last-Modified', lastModified);
  if (etagMatches(req.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.code(200).header('Content-Type', 'application/json').send(doc.json);
}

export function v3Url(group: string, version: string, hash: string): string {
  return `/openapi/v3/apis/${group}/${version}?hash=${hash}`;
}

/** `make()`'s value, made at the first call. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

export function registerOpenApiRoutes(app: FastifyInstance, defs: ResourceDefinition[]): void {
  const lastModified = new Date().toUTCString();
  const gvs = groupVersions(defs).map((gv) => ({ ...gv, built: once(() => built(buildOpenApiV3(gv.group, gv.version, gv.defs))) }));
  const index = once(() => built({
    paths: Object.fromEntries(gvs.map((gv) => [`apis/${gv.group}/${gv.version}`, { serverRelativeURL: v3Url(gv.group, gv.version, gv.built().hash) }])),
  }));
  const v2 = once(() => built(buildOpenApiV2(defs)));
  const jsonOnly = () => errors.notAcceptable(['application/json']);

  app.get('/openapi/v3', async (req, reply) => sendDoc(req, reply, index(), lastModified));

  for (const gv of gvs) {
    app.get(`/openapi/v3/apis/${gv.group}/${gv.version}`, async (req, reply) => {
      reply.header('Vary', 'Accept');
      if (!acceptsJson(req.headers.accept)) throw jsonOnly();
      const hash = (req.query as Record<string, string | string[] | undefined>).hash;
      const wanted = Array.isArray(hash) ? hash[0] : hash;
      const doc = gv.built();
      if (wanted) {
        if (wanted !== doc.hash) {
          reply.header('ETag', `"${doc.hash}"`);
          return reply.redirect(v3Url(gv.group, gv.version, doc.hash), 301);
        }
        reply.header('Cache-Control', 'public, immutable');
        reply.header('Expires', new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString());
      }
      return sendDoc(req, reply, doc, lastModified);
    });
  }
  app.get('/openapi/v3/*', async () => { throw errors.pathNotFound(); });

  app.get('/openapi/v2', async (req, reply) => {
    reply.header('Vary', 'Accept');
    // kubectl asks for protobuf only (application/com.github.proto-openapi.spec.v2@v1.0+protobuf), which we don't serve.
    if (!acceptsJson(req.headers.accept)) throw jsonOnly();
    return sendDoc(req, reply, v2(), lastModified);
  });
}
