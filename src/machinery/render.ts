// Serializes objects and lists in the negotiated format, from each entry's ready JSON where possible.
import type { Output } from './negotiation.js';
import type { ResourceDefinition } from './resource.js';
import { apiVersionOf } from './resource.js';
import { BodyBuilder } from './bodyBuilder.js';
import { partialObjectMetadata, partialObjectMetadataList, partialObjectMetadataListBuffer, table, tableBuffer, type IncludeObject } from './table.js';
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

export function renderList(def: ResourceDefinition, items: readonly Renderable[], listMeta: ListMeta, out: Output, includeObject: IncludeObject): Rendered {
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

/** A list body to send as it is: bytes for JSON, PartialObjectMetadata and Table; YAML is still to convert. */
export type RenderedList = { contentType: string; body: Buffer; yaml?: undefined } | (Rendered & { yaml: true });

// What fastify sends for a JSON string body (it appends the charset); kept for bytes, so the header
// does not depend on the body's form.
const jsonBytes = (body: Buffer): RenderedList => ({ contentType: 'application/json; charset=utf-8', body });

/** renderList's bytes, written straight into a buffer (a list is many ready pieces; see bodyBuilder.ts). */
export function renderListBody(def: ResourceDefinition, items: readonly Renderable[], listMeta: ListMeta, out: Output, includeObject: IncludeObject): RenderedList {
  switch (out.format) {
    case 'json': return jsonBytes(jsonListBuffer(def, items, listMeta));
    case 'yaml': return { ...renderList(def, items, listMeta, { format: 'json' }, includeObject), contentType: 'application/yaml', yaml: true };
    case 'metadata': return jsonBytes(partialObjectMetadataListBuffer(items.map((i) => i.object), listMeta, out.version));
    case 'table': return jsonBytes(tableBuffer(def, items, listMeta, { version: out.version, includeObject, withColumns: true }));
  }
}

function jsonListBuffer(def: ResourceDefinition, items: readonly Renderable[], listMeta: ListMeta): Buffer {
  const b = new BodyBuilder();
  b.write(`{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":${JSON.stringify(listMeta)},"items":[`);
  for (let i = 0; i < items.length; i++) {
    if (i > 0) b.writeAscii(0x2c); // ','
    b.write(items[i].json);
  }
  b.write(']}');
  return b.finish();
}
