// Discovery routes: content negotiation between legacy and aggregated discovery, ETag caching, and
// the standalone-only core endpoints (/api, /api/v1, implicit namespaces) and /version.
// The documents are computed once at registration (documents.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseAccept, type MediaRange } from '../negotiation.js';
import { hostOf } from '../protocol.js';
import type { ResourceDefinition } from '../../registry/resource.js';
import { errors } from '../../apimachinery/status.js';
import { AGGREGATED_V2BETA1_CONTENT_TYPE, AGGREGATED_V2_CONTENT_TYPE } from '../mediaTypes.js';
import {
  AGGREGATED_KIND, DISCOVERY_GROUP, aggregatedGroupList, apiGroup, groupsOf, legacyGroupList, resourceList, sha512Hex, versionInfo,
  type VersionInput,
} from './documents.js';

export interface DiscoveryOptions {
  /** kubectl talks to us directly: also serve /api (empty) and /version. */
  standalone: boolean;
  version: VersionInput;
}

// ---- negotiation ----

export type DiscoveryFormat = 'legacy' | 'v2' | 'v2beta1';

function isPlainJson(r: MediaRange): boolean {
  if (r.params['as'] !== undefined || r.params['g'] !== undefined || r.params['v'] !== undefined) return false;
  return (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) || (r.type === '*' && r.subtype === '*');
}

/**
 * Like the apiserver's discovery negotiation: walk the Accept alternatives best-first; an aggregated
 * one (application/json;g=apidiscovery.k8s.io;v=v2|v2beta1;as=APIGroupDiscoveryList) picks the aggregated
 * document when allowed, plain JSON (or a wildcard) picks legacy, anything else is skipped. Nothing acceptable → undefined.
 */
export function negotiateDiscovery(accept: string | undefined, allowAggregated: boolean): DiscoveryFormat | undefined {
  for (const r of parseAccept(accept)) {
    const p = r.params;
    if (p['as'] !== undefined) {
      if (!allowAggregated) continue;
      if (r.type !== 'application' || r.subtype !== 'json') continue;
      if (p['as'] !== AGGREGATED_KIND || p['g'] !== DISCOVERY_GROUP) continue;
      if (p['v'] === 'v2' || p['v'] === 'v2beta1') return p['v'];
      continue;
    }
    if (isPlainJson(r)) return 'legacy';
  }
  return undefined;
}

const notAcceptable = () => errors.notAcceptable(['application/json', AGGREGATED_V2_CONTENT_TYPE, AGGREGATED_V2BETA1_CONTENT_TYPE]);

// ---- serving ----

/** A ready response: Buffer bodies also keep fastify from rewriting our Content-Type (it appends charset to strings). */
interface Prepared { body: Buffer; etag: string }

function prepare(obj: unknown): Prepared {
  const body = Buffer.from(JSON.stringify(obj));
  return { body, etag: `"${sha512Hex(body)}"` };
}

/** If-None-Match against our strong ETag (a list, `*`, and weak-prefixed tags allowed). */
export function etagMatches(ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const raw = Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch;
  return raw.split(',').map((t) => t.trim().replace(/^W\//, '')).some((t) => t === '*' || t === etag);
}

function send(req: FastifyRequest, reply: FastifyReply, p: Prepared, contentType: string, cacheControl?: string) {
  reply.header('Vary', 'Accept');
  reply.header('ETag', p.etag);
  if (cacheControl) reply.header('Cache-Control', cacheControl);
  if (etagMatches(req.headers['if-none-match'], p.etag)) return reply.code(304).send();
  return reply.code(200).header('Content-Type', contentType).send(p.body);
}

export function registerDiscoveryRoutes(app: FastifyInstance, defs: ResourceDefinition[], opts: DiscoveryOptions): void {
  const groups = groupsOf(defs);
  const apis = {
    legacy: prepare(legacyGroupList(defs)),
    v2: prepare(aggregatedGroupList(defs, 'v2')),
    v2beta1: prepare(aggregatedGroupList(defs, 'v2beta1')),
  };
  const aggregatedContentType = { v2: AGGREGATED_V2_CONTENT_TYPE, v2beta1: AGGREGATED_V2BETA1_CONTENT_TYPE };

  app.get('/apis', async (req, reply) => {
    const format = negotiateDiscovery(req.headers.accept, true);
    if (!format) throw notAcceptable();
    if (format === 'legacy') return send(req, reply, apis.legacy, 'application/json');
    return send(req, reply, apis[format], aggregatedContentType[format], 'public');
  });

  for (const g of groups) {
    const groupBody = prepare({ kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) });
    app.get(`/apis/${g.name}`, async (req, reply) => {
      if (!negotiateDiscovery(req.headers.accept, false)) throw notAcceptable();
      return send(req, reply, groupBody, 'application/json');
    });
    for (const v of g.versions) {
      const listBody = prepare(resourceList(g.name, v, g.defsByVersion.get(v)!));
      app.get(`/apis/${g.name}/${v}`, async (req, reply) => {
        if (!negotiateDiscovery(req.headers.accept, false)) throw notAcceptable();
        return send(req, reply, listBody, 'application/json');
      });
    }
  }
  // Anything else directly under /apis is an unknown group or version.
  const notFound = async () => { throw errors.pathNotFound(); };
  app.get('/apis/:group', notFound);
  app.get('/apis/:group/:version', notFound);

  if (opts.standalone) {
    // Standalone serves one core resource, the implicit namespaces below; discovery says so, because
    // clients that walk all of discovery (kube-rs Discovery::run) fail on a core group without versions.
    const namespaces = { resource: 'namespaces', responseKind: { group: '', version: 'v1', kind: 'Namespace' }, scope: 'Cluster', singularResource: 'namespace', verbs: ['get'] };
    const coreItems = [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [namespaces], freshness: 'Current' }] }];
    const emptyAggregated = {
      v2: prepare({ kind: AGGREGATED_KIND, apiVersion: `${DISCOVERY_GROUP}/v2`, metadata: {}, items: coreItems }),
      v2beta1: prepare({ kind: AGGREGATED_KIND, apiVersion: `${DISCOVERY_GROUP}/v2beta1`, metadata: {}, items: coreItems }),
    };
    const coreResources = prepare({ kind: 'APIResourceList', groupVersion: 'v1',
      resources: [{ name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['get'] }] });
    app.get('/api/v1', async (req, reply) => {
      if (!negotiateDiscovery(req.headers.accept, false)) throw notAcceptable();
      return send(req, reply, coreResources, 'application/json');
    });
    app.get('/api', async (req, reply) => {
      const format = negotiateDiscovery(req.headers.accept, true);
      if (!format) throw notAcceptable();
      if (format !== 'legacy') return send(req, reply, emptyAggregated[format], aggregatedContentType[format], 'public');
      const serverAddress = hostOf(req.raw) ?? `${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? 443}`;
      const body = prepare({
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
      });
      return send(req, reply, body, 'application/json');
    });
    // Standalone accepts any namespace name, so each exists implicitly; kubectl checks the
    // namespace after a NotFound outside "default" and would otherwise report that instead.
    app.get('/api/v1/namespaces/:name', async (req, reply) => {
      const { name } = req.params as { name: string };
      const ns = { kind: 'Namespace', apiVersion: 'v1', metadata: { name }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } };
      return reply.code(200).header('Content-Type', 'application/json').send(JSON.stringify(ns));
    });
  }

  // /version is harmless in cluster mode (requests for it never reach us through the aggregator).
  const version = Buffer.from(JSON.stringify(versionInfo(opts.version), null, 2));
  app.get('/version', async (_req, reply) => reply.code(200).header('Content-Type', 'application/json').send(version));
}
