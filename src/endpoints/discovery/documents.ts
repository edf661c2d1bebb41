// Discovery documents: legacy (APIGroupList / APIGroup / APIResourceList), aggregated
// (apidiscovery.k8s.io v2 and v2beta1 APIGroupDiscoveryList) and /version, all derived from the
// resource definitions; plus the hashes upstream publishes with them.
import { createHash } from 'node:crypto';
import { hasStatusSubresource, STATUS_VERBS, verbsOf, type ResourceDefinition } from '../../registry/resource.js';

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

/** What the server is told about its version; versionInfo fills in the rest. */
export type VersionInput = Partial<VersionInfo> & { gitVersion: string };

export const DISCOVERY_GROUP = 'apidiscovery.k8s.io';
export const AGGREGATED_KIND = 'APIGroupDiscoveryList';

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

export interface GroupInfo { name: string; versions: string[]; defsByVersion: Map<string, ResourceDefinition[]> }

export function groupsOf(defs: ResourceDefinition[]): GroupInfo[] {
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

export function apiGroup(g: GroupInfo) {
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

/** A subresource's own entry in an APIResourceList ("llamas/status"), as kube-apiserver lists a CRD's. */
function apiSubresources(def: ResourceDefinition) {
  if (!hasStatusSubresource(def)) return [];
  return [{ name: `${def.plural}/status`, singularName: '', namespaced: def.namespaced, kind: def.kind, verbs: [...STATUS_VERBS] }];
}

function apiResourceDiscovery(def: ResourceDefinition) {
  const responseKind = { group: def.group, version: def.version, kind: def.kind };
  const r: Record<string, unknown> = {
    resource: def.plural,
    responseKind,
    scope: def.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: def.singular,
    verbs: verbsOf(def),
  };
  if (def.shortNames.length) r.shortNames = def.shortNames;
  if (def.categories.length) r.categories = def.categories;
  // Aggregated discovery nests subresources in their resource (APISubresourceDiscovery).
  if (hasStatusSubresource(def)) r.subresources = [{ subresource: 'status', responseKind: { ...responseKind }, verbs: [...STATUS_VERBS] }];
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
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gvOf(group, version), resources: defs.flatMap((d) => [apiResource(d), ...apiSubresources(d)]) };
}

const goArch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ia32: '386', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

export function versionInfo(v: VersionInput): VersionInfo {
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
