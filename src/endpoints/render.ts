// Serializes objects and lists in the negotiated format, from each entry's ready JSON where possible.
import type { Output } from './negotiation.js';
import type { ResourceDefinition } from '../registry/resource.js';
import { apiVersionOf } from '../registry/resource.js';
import { piecesBody, piecesText, type ChunkSource, type ListPieces } from './bodyBuilder.js';
import { partialObjectMetadata, partialObjectMetadataList, partialObjectMetadataListPieces, table, tablePieces, type IncludeObject } from './table.js';
import type { KubeObject, ListMeta } from '../apimachinery/types.js';

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
      return json(piecesText(jsonListPieces(def, items, listMeta)));
    case 'yaml':
      return { ...renderList(def, items, listMeta, { format: 'json' }, includeObject), contentType: 'application/yaml', yaml: true };
    case 'metadata':
      return json(partialObjectMetadataList(items.map((i) => i.object), listMeta, out.version));
    case 'table':
      return json(table(def, items, listMeta, { version: out.version, includeObject, withColumns: true }));
  }
}

/** A list body to send as it is: bytes, or chunks made as they are sent, for JSON, PartialObjectMetadata and Table; YAML is still to convert. */
export type RenderedList = { contentType: string; body: Buffer | ChunkSource; yaml?: undefined } | (Rendered & { yaml: true });

// What fastify sends for a JSON string body (it appends the charset); kept for bytes, so the header
// does not depend on the body's form.
const jsonBody = (body: Buffer | ChunkSource): RenderedList => ({ contentType: 'application/json; charset=utf-8', body });

/** renderList's bytes, written straight into buffers, a chunk at a time for a large list (bodyBuilder.ts). */
export function renderListBody(def: ResourceDefinition, items: readonly Renderable[], listMeta: ListMeta, out: Output, includeObject: IncludeObject): RenderedList {
  switch (out.format) {
    case 'json': return jsonBody(piecesBody(jsonListPieces(def, items, listMeta)));
    case 'yaml': return { ...renderList(def, items, listMeta, { format: 'json' }, includeObject), contentType: 'application/yaml', yaml: true };
    case 'metadata': return jsonBody(piecesBody(partialObjectMetadataListPieces(items.map((i) => i.object), listMeta, out.version)));
    case 'table': return jsonBody(piecesBody(tablePieces(def, items, listMeta, { version: out.version, includeObject, withColumns: true })));
  }
}

function jsonListPieces(def: ResourceDefinition, items: readonly Renderable[], listMeta: ListMeta): ListPieces {
  return {
    count: items.length,
    head: (out) => out.write(`{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":${JSON.stringify(listMeta)},"items":[`),
    item: (out, i) => { if (i > 0) out.write(','); out.write(items[i].json); },
    tail: (out) => out.write(']}'),
  };
}
