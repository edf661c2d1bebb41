// Discovery: legacy (APIGroupList / APIGroup / APIResourceList) and aggregated
// (apidiscovery.k8s.io v2 and v2beta1 APIGroupDiscoveryList), all derived from the resource
// definitions and computed once at registration.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseAccept, type MediaRange } from './negotiation.js';
import { hostOf } from './protocol.js';
import { verbsOf, type ResourceDefinition } from '../registry/resource.js';
import { errors } from '../apimachinery/status.js';

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

export interface DiscoveryOptions {
  /** kubectl talks to us directly: also serve /api (empty) and /version. */
  standalone: boolean;
  version: Partial<VersionInfo> & { gitVersion: string };
}

const DISCOVERY_GROUP = 'apidiscovery.k8s.io';
const AGGREGATED_KIND = 'APIGroupDiscoveryList';
export const AGGREGATED_V2_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** Uppercase hex SHA-512, the ETag format of aggregated discovery and OpenAPI v3. */
export function sha512Hex(data: string | Buffer): string {
  return createHash('sha512').update(data).digest('hex').toUpperCase();
}

/** base64 of the first 8 bytes of sha256("<group>/<version>/<kind>") (apiserver's storageversionhash.go). */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

// ---- kube-aware version ordering (k8s.io/apimachinery/pkg/version) ----

const kubeVersionRe = /^v(\d+)(?:(alpha|beta)(\d+)?)?$/;

/** Positive when a sorts before b in preference: GA > beta > alpha > non-kube versions; higher numbers first. */
export function compareKubeAwareVersions(a: string, b: string): number {
  const ma = kubeVersionRe.exec(a);
  const mb = kubeVersionRe.exec(b);
  if (!ma && !mb) return a < b ? 1 : a > b ? -1 : 0; // both non-kube: lexical, ascending order first
  if (!ma) return -1;
  if (!mb) return 1;
  const rank = (m: RegExpExecArray) => (m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1);
  if (rank(ma) !== rank(mb)) return rank(ma) - rank(mb);
  const major = Number(ma[1]) - Number(mb[1]);
  if (major !== 0) return major;
  return Number(ma[3] ?? 0) - Number(mb[3] ?? 0);
}

// ---- bodies ----

interface GroupInfo { name: string; versions: string[]; defsByVersion: Map<string, ResourceDefinition[]> }

function groupsOf(defs: ResourceDefinition[]): GroupInfo[] {
  const groups = new Map<string, GroupInfo>();
  for (const def of defs) {
    let g = groups.get(def.group);
    if (!g) { g = { name: def.group, versions: [], defsByVersion: new Map() }; groups.set(def.group, g); }
    if (!g.defsByVersion.has(def.version)) { g.defsByVersion.set(def.version, []); g.versions.push(def.version); }
    g.defsByVersion.get(def.version)!.push(def);
  }
  for (const g of groups.values()) g.versions.sort((a, b) => compareKubeAwareVersions(b, a));
  return [...groups.values()];
}

const gvOf = (group: string, version: string) => (group ? `${group}/${version}` : version);

function apiGroup(g: GroupInfo) {
  const versions = g.versions.map((v) => ({ groupVersion: gvOf(g.name, v), version: v }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

export function apiResource(def: ResourceDefinition) {
  const r: Record<string, unknown> = {
    name: def.plural,
    singularName: def.singular,
    namespaced: def.namespaced,
    kind: def.kind,
    verbs: verbsOf(def),
  };
  if (def.shortNames.length) r.shortNames = def.shortNames;
  if (def.categories.length) r.categories = def.categories;
  r.storageVersionHash = storageVersionHash(def.group, def.version, def.kind);
  return r;
}

function apiResourceDiscovery(def: ResourceDefinition) {
  const r: Record<string, unknown> = {
    resource: def.plural,
    responseKind: { group: def.group, version: def.version, kind: def.kind },
    scope: def.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: def.singular,
    verbs: verbsOf(def),
  };
  if (def.shortNames.length) r.shortNames = def.shortNames;
  if (def.categories.length) r.categories = def.categories;
  return r;
}

export function legacyGroupList(defs: ResourceDefinition[]) {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groupsOf(defs).map(apiGroup) };
}

export function aggregatedGroupList(defs: ResourceDefinition[], version: 'v2' | 'v2beta1') {
  return {
    kind: AGGREGATED_KIND,
    apiVersion: `${DISCOVERY_GROUP}/${version}`,
    metadata: {},
    items: groupsOf(defs).map((g) => ({
      metadata: { name: g.name },
      versions: g.versions.map((v) => ({
        version: v,
        resources: g.defsByVersion.get(v)!.map(apiResourceDiscovery),
        freshness: 'Current',
      })),
    })),
  };
}

export function resourceList(group: string, version: string, defs: ResourceDefinition[]) {
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gvOf(group, version), resources: defs.map(apiResource) };
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

const goArch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ia32: '386', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

export function versionInfo(v: DiscoveryOptions['version']): VersionInfo {
  const m = /^v?(\d+)\.(\d+)/.exec(v.gitVersion);
  return {
    major: v.major ?? (m ? m[1] : ''),
    minor: v.minor ?? (m ? m[2] : ''),
    gitVersion: v.gitVersion,
    gitCommit: v.gitCommit ?? '',
    gitTreeState: v.gitTreeState ?? '',
    buildDate: v.buildDate ?? '1970-01-01T00:00:00Z',
    goVersion: v.goVersion ?? `node${process.versions.node}`,
    compiler: v.compiler ?? 'node',
    platform: v.platform ?? `${process.platform}/${goArch[process.arch] ?? process.arch}`,
  };
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
