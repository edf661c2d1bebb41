// A resource plug-in: one definition drives discovery, OpenAPI, routes, validation and Table output;
// its `rest` storage implements the verbs it serves (rest.ts).
import type { z } from 'zod';
import type { FieldError } from '../apimachinery/status.js';
import type { KubeObject, RequestInfo } from '../apimachinery/types.js';
import { restVerbs, type RestStorage, type StatusStorage, type Verb } from './rest.js';

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
  /**
   * The subresources it serves, as a CRD's `subresources` declares them. `status: true` serves
   * /status (get, update, patch: only `.status` changes there) and makes the main resource keep the
   * stored status (create drops it, update/patch keep it).
   */
  subresources?: { status?: true };
  /**
   * Checks beyond the schema (a typed strategy's Validate, e.g. metav1.Condition's rules), run on the
   * schema-valid object; paths are the object's (`status.conditions[0].reason`).
   */
  validate?: (obj: KubeObject) => FieldError[];
}

export interface ResourceDefinition extends ResourceDescriptor {
  rest: RestStorage;
  /** The storage of each declared subresource (needed for every one `subresources` declares). */
  subresourceRest?: { status?: StatusStorage };
}

/** The verbs of the status subresource (discovery's "llamas/status"), as upstream lists them. */
export const STATUS_VERBS: readonly Verb[] = ['get', 'patch', 'update'];

export function hasStatusSubresource(def: Pick<ResourceDescriptor, 'subresources'>): boolean {
  return def.subresources?.status === true;
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
