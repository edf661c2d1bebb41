// Serializes objects and lists in the negotiated format, from each entry's ready JSON where possible.
import type { Output } from './negotiation.js';
import type { ResourceDefinition } from './resource.js';
import { apiVersionOf } from './resource.js';
import { partialObjectMetadata, partialObjectMetadataList, table, type IncludeObject } from './table.js';
import type { KubeObject, ListMeta } from './types.js';

/** `yaml`: the body is JSON still to be converted (off the event loop, by the YAML codec). */
export interface Rendered { contentType: string; body: string; yaml?: true }

export interface Renderable { object: KubeObject; json: string }

const json = (body: string): Rendered => ({ contentType: 'application/json', body });

export function renderObject(def: ResourceDefinition, item: Renderable, out: Output, includeObject: IncludeObject): Rendered {
  switch (out.format) {
    case 'json': return json(item.json);
    case 'yaml': return { contentType: 'application/yaml', body: item.json, yaml: true };
    case 'metadata': return json(partialObjectMetadata(item.object, out.version));
    case 'table': {
      const meta: ListMeta = { resourceVersion: item.object.metadata.resourceVersion ?? '' };
      return json(table(def, [item], meta, { version: out.version, includeObject, withColumns: true }));
    }
  }
}

export function renderList(def: ResourceDefinition, items: Renderable[], listMeta: ListMeta, out: Output, includeObject: IncludeObject): Rendered {
  switch (out.format) {
    case 'json':
      return json(`{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":${JSON.stringify(listMeta)},"items":[${items.map((i) => i.json).join(',')}]}`);
    case 'yaml':
      return { ...renderList(def, items, listMeta, { format: 'json' }, includeObject), contentType: 'application/yaml', yaml: true };
    case 'metadata':
      return json(partialObjectMetadataList(items.map((i) => i.object), listMeta, out.version));
    case 'table':
      return json(table(def, items, listMeta, { version: out.version, includeObject, withColumns: true }));
  }
}
