// A resource plug-in: one definition drives discovery, OpenAPI, routes, validation and Table output;
// its `rest` storage implements the verbs it serves (rest.ts).
import type { z } from 'zod';
import type { KubeObject, RequestInfo } from '../apimachinery/types.js';
import { restVerbs, type RestStorage, type Verb } from './rest.js';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** 0 = always shown, 1 = only with -o wide. */
  priority: number;
  cell: (obj: KubeObject, now: number) => string | number | boolean | null;
}

/** Everything about a resource but its storage: what the generic store and the endpoints read. */
export interface ResourceDescriptor {
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
  /**
   * Permissions a caller needs besides those on this resource (e.g. FarmPods show Pods, so reading
   * them needs the same verb on pods). Each is authorized like the request itself.
   */
  alsoRequires?: (info: RequestInfo) => { info: RequestInfo; why: string }[];
}

export interface ResourceDefinition extends ResourceDescriptor {
  rest: RestStorage;
}

export function apiVersionOf(def: Pick<ResourceDescriptor, 'group' | 'version'>): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

export function groupResource(def: Pick<ResourceDescriptor, 'group' | 'plural'>) {
  return { group: def.group, resource: def.plural };
}

export function selectableFields(def: ResourceDescriptor): string[] {
  const base = ['metadata.name'];
  if (def.namespaced) base.push('metadata.namespace');
  return [...base, ...Object.keys(def.fieldSelectors ?? {})];
}

export function fieldValue(def: ResourceDescriptor, obj: KubeObject, field: string): string | undefined {
  if (field === 'metadata.name') return obj.metadata.name;
  if (field === 'metadata.namespace') return obj.metadata.namespace ?? '';
  return def.fieldSelectors?.[field]?.(obj);
}

export type { Verb } from './rest.js';

export function verbsOf(def: ResourceDefinition): Verb[] {
  return restVerbs(def.rest);
}
