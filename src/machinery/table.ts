// Table and PartialObjectMetadata renderings (meta.k8s.io), built from a resource's printer columns.
import type { ResourceDefinition } from './resource.js';
import { ApiError } from './status.js';
import type { KubeObject, ListMeta } from './types.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function parseIncludeObject(v: string | undefined): IncludeObject {
  if (v === undefined || v === '') return 'Metadata';
  if (v === 'None' || v === 'Metadata' || v === 'Object') return v;
  throw new ApiError(400, 'BadRequest', `unable to convert to Table as requested: includeObject=${v} is not supported; supported values are None, Metadata, Object`);
}

// Stored objects are immutable, so their metadata JSON can be made once per object.
const metadataJson = new WeakMap<KubeObject, string>();

export function partialObjectMetadata(obj: KubeObject, version: 'v1' | 'v1beta1'): string {
  let meta = metadataJson.get(obj);
  if (meta === undefined) metadataJson.set(obj, (meta = JSON.stringify(obj.metadata)));
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":${meta}}`;
}

export function partialObjectMetadataList(objs: KubeObject[], listMeta: ListMeta, version: 'v1' | 'v1beta1'): string {
  return `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":${JSON.stringify(listMeta)},"items":[${objs.map((o) => partialObjectMetadata(o, version)).join(',')}]}`;
}

export function columnDefinitions(def: ResourceDefinition) {
  return def.columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority }));
}

export interface TableOptions {
  version: 'v1' | 'v1beta1';
  includeObject: IncludeObject;
  /** Watch events after the first carry no column definitions. */
  withColumns: boolean;
  now?: number;
}

export function table(def: ResourceDefinition, items: { object: KubeObject; json: string }[], listMeta: ListMeta, opts: TableOptions): string {
  const now = opts.now ?? Date.now();
  const rows = items.map(({ object, json }) => {
    const cells = JSON.stringify(def.columns.map((c) => c.cell(object, now)));
    const embedded = opts.includeObject === 'None' ? '' : `,"object":${opts.includeObject === 'Object' ? json : partialObjectMetadata(object, opts.version)}`;
    return `{"cells":${cells}${embedded}}`;
  });
  const columns = opts.withColumns ? JSON.stringify(columnDefinitions(def)) : 'null';
  return `{"kind":"Table","apiVersion":"meta.k8s.io/${opts.version}","metadata":${JSON.stringify(listMeta)},"columnDefinitions":${columns},"rows":[${rows.join(',')}]}`;
}
