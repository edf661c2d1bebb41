// Table and PartialObjectMetadata renderings (meta.k8s.io), built from a resource's printer columns.
import { piecesText, type ListPieces } from './bodyBuilder.js';
import type { ResourceDefinition } from '../registry/resource.js';
import { ApiError } from '../apimachinery/status.js';
import { rowCells } from '../registry/tableCells.js';
import type { KubeObject, ListMeta } from '../apimachinery/types.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function parseIncludeObject(v: string | undefined): IncludeObject {
  if (v === undefined || v === '') return 'Metadata';
  if (v === 'None' || v === 'Metadata' || v === 'Object') return v;
  throw new ApiError(400, 'BadRequest', `unable to convert to Table as requested: includeObject=${v} is not supported; supported values are None, Metadata, Object`);
}

// Stored objects are immutable, so their metadata JSON can be made once per object.
const metadataJson = new WeakMap<KubeObject, string>();

function metadataOf(obj: KubeObject): string {
  let meta = metadataJson.get(obj);
  if (meta === undefined) metadataJson.set(obj, (meta = JSON.stringify(obj.metadata)));
  return meta;
}

const pomPrefix = (version: 'v1' | 'v1beta1') => `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${version}","metadata":`;

export function partialObjectMetadata(obj: KubeObject, version: 'v1' | 'v1beta1'): string {
  return `${pomPrefix(version)}${metadataOf(obj)}}`;
}

/** The pieces of a PartialObjectMetadataList's JSON. */
export function partialObjectMetadataListPieces(objs: readonly KubeObject[], listMeta: ListMeta, version: 'v1' | 'v1beta1'): ListPieces {
  const prefix = pomPrefix(version);
  return {
    count: objs.length,
    head: (out) => out.write(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${version}","metadata":${JSON.stringify(listMeta)},"items":[`),
    item: (out, i) => { out.write(i === 0 ? prefix : `},${prefix}`); out.write(metadataOf(objs[i])); },
    tail: (out) => out.write(objs.length ? '}]}' : ']}'),
  };
}

export function partialObjectMetadataList(objs: readonly KubeObject[], listMeta: ListMeta, version: 'v1' | 'v1beta1'): string {
  return piecesText(partialObjectMetadataListPieces(objs, listMeta, version));
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

interface TableItem { object: KubeObject; json: string }

function tableHead(def: ResourceDefinition, listMeta: ListMeta, opts: TableOptions): string {
  const columns = opts.withColumns ? JSON.stringify(columnDefinitions(def)) : 'null';
  return `{"kind":"Table","apiVersion":"meta.k8s.io/${opts.version}","metadata":${JSON.stringify(listMeta)},"columnDefinitions":${columns},"rows":[`;
}

/** The pieces of the table's JSON. */
export function tablePieces(def: ResourceDefinition, items: readonly TableItem[], listMeta: ListMeta, opts: TableOptions): ListPieces {
  const now = opts.now ?? Date.now();
  // Each row is {"cells":[…]} or {"cells":[…],"object":…}; the separator between rows joins the previous
  // row's end to the next one's start, so a row costs few writes.
  const embed = opts.includeObject !== 'None';
  const objectPrefix = opts.includeObject === 'Metadata' ? `,"object":${pomPrefix(opts.version)}` : ',"object":';
  const rowEnd = opts.includeObject === 'Metadata' ? '}}' : '}';
  const rowSeparator = `${rowEnd},{"cells":`;
  return {
    count: items.length,
    head: (out) => out.write(tableHead(def, listMeta, opts)),
    item: (out, i) => {
      const { object, json } = items[i];
      out.write(i === 0 ? '{"cells":' : rowSeparator);
      out.write(rowCells(def.columns, object, now));
      if (embed) {
        out.write(objectPrefix);
        out.write(opts.includeObject === 'Object' ? json : metadataOf(object));
      }
    },
    tail: (out) => out.write(items.length ? `${rowEnd}]}` : ']}'),
  };
}

export function table(def: ResourceDefinition, items: readonly TableItem[], listMeta: ListMeta, opts: TableOptions): string {
  return piecesText(tablePieces(def, items, listMeta, opts));
}

