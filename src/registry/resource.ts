// A resource plug-in: one definition drives discovery, OpenAPI, routes, validation and Table output.
import type { z } from 'zod';
import type { Entry, ObjectCache } from '../storage/cacher/objectCache.js';
import type { RequestInfo } from '../endpoints/requestInfo.js';
import type { KubeObject } from '../apimachinery/types.js';

export interface WriteContext {
  /** dryRun=All: compute and validate everything, store nothing, emit no event. */
  dryRun: boolean;
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
}

/**
 * Validates and prepares the object a write is about to store; throws ApiError to refuse. Pure: a
 * store may run it again when the object changed while it ran (etcd3's GuaranteedUpdate does too).
 */
export type Mutation = (current: KubeObject | undefined) => KubeObject | Promise<KubeObject>;

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** 0 = always shown, 1 = only with -o wide. */
  priority: number;
  cell: (obj: KubeObject, now: number) => string | number | boolean | null;
}

/** Read verbs are served from an ObjectCache; write verbs exist only when a provider implements them. */
export interface Provider {
  readonly cache: ObjectCache;
  /** Why reads cannot be served right now (e.g. an upstream cache not yet synced), or undefined. */
  unavailable?(): string | undefined;
  create?(obj: KubeObject, ctx: WriteContext): Promise<Entry>;
  /** Replaces the object; `mutate` gets the current object (or undefined) and returns the desired one. */
  update?(namespace: string | undefined, name: string, mutate: Mutation, ctx: WriteContext): Promise<{ entry: Entry; created: boolean }>;
  delete?(namespace: string | undefined, name: string, opts: DeleteOptions, ctx: WriteContext): Promise<{ entry: Entry; deleted: boolean }>;
}

export interface ResourceDefinition {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  namespaced: boolean;
  description: string;
  /** The whole object (apiVersion, kind, metadata, spec, status). Validation and OpenAPI derive from it. */
  schema: z.ZodType;
  columns: PrinterColumn[];
  /** Field selectors beyond metadata.name / metadata.namespace. */
  fieldSelectors?: Record<string, (obj: KubeObject) => string | undefined>;
  provider: Provider;
  /**
   * Permissions a caller needs besides those on this resource (e.g. FarmPods show Pods, so reading
   * them needs the same verb on pods). Each is authorized like the request itself.
   */
  alsoRequires?: (info: RequestInfo) => { info: RequestInfo; why: string }[];
}

export function apiVersionOf(def: Pick<ResourceDefinition, 'group' | 'version'>): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

export function verbsOf(def: ResourceDefinition): Verb[] {
  const p = def.provider;
  const verbs: Verb[] = ['get', 'list', 'watch'];
  if (p.create) verbs.push('create');
  if (p.update) verbs.push('update', 'patch');
  if (p.delete) verbs.push('delete', 'deletecollection');
  return verbs.sort();
}

export function groupResource(def: Pick<ResourceDefinition, 'group' | 'plural'>) {
  return { group: def.group, resource: def.plural };
}

export function selectableFields(def: ResourceDefinition): string[] {
  const base = ['metadata.name'];
  if (def.namespaced) base.push('metadata.namespace');
  return [...base, ...Object.keys(def.fieldSelectors ?? {})];
}

export function fieldValue(def: ResourceDefinition, obj: KubeObject, field: string): string | undefined {
  if (field === 'metadata.name') return obj.metadata.name;
  if (field === 'metadata.namespace') return obj.metadata.namespace ?? '';
  return def.fieldSelectors?.[field]?.(obj);
}
