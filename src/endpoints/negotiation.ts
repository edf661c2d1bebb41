// Accept-header negotiation for object responses (JSON, YAML, Table, PartialObjectMetadata).
import { ApiError } from '../apimachinery/status.js';

export interface MediaRange { type: string; subtype: string; params: Record<string, string>; q: number }

export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header) return [{ type: '*', subtype: '*', params: {}, q: 1 }];
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [mt, ...rawParams] = part.split(';').map((s) => s.trim());
    if (!mt) continue;
    const [type, subtype = '*'] = mt.toLowerCase().split('/');
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (k === 'q') q = Number(v);
      else params[k] = v;
    }
    if (!(q > 0)) continue;
    ranges.push({ type, subtype, params, q });
  }
  // Stable sort: a higher q first, the client's order among equals.
  return ranges.map((r, i) => ({ r, i })).sort((a, b) => b.r.q - a.r.q || a.i - b.i).map((x) => x.r);
}

export type Output =
  | { format: 'json' }
  | { format: 'yaml' }
  | { format: 'table'; version: 'v1' | 'v1beta1' }
  | { format: 'metadata'; version: 'v1' | 'v1beta1' };

export type Target = 'object' | 'list' | 'watch';

const acceptedMediaTypes = ['application/json', 'application/yaml', 'application/json;stream=watch'];

function isJsonRange(r: MediaRange): boolean {
  return (r.type === 'application' && (r.subtype === 'json' || r.subtype === '*')) || (r.type === '*' && r.subtype === '*');
}

/**
 * Picks the first acceptable alternative the way the apiserver's endpoint negotiation does:
 * `as=Table` / `as=PartialObjectMetadata[List]` transforms under meta.k8s.io, plain JSON otherwise.
 * Protobuf alternatives are skipped; nothing acceptable is a 406.
 */
export function negotiate(accept: string | undefined, target: Target): Output {
  for (const r of parseAccept(accept)) {
    const as = r.params['as'];
    if (as !== undefined) {
      if (!(r.type === 'application' && r.subtype === 'json')) continue;
      if (r.params['g'] !== 'meta.k8s.io') continue;
      const v = r.params['v'];
      if (v !== 'v1' && v !== 'v1beta1') continue;
      if (as === 'Table') return { format: 'table', version: v };
      const wantKind = target === 'list' ? 'PartialObjectMetadataList' : 'PartialObjectMetadata';
      if (as === wantKind) return { format: 'metadata', version: v };
      continue;
    }
    if (isJsonRange(r)) return { format: 'json' };
    if (target !== 'watch' && r.type === 'application' && r.subtype === 'yaml') return { format: 'yaml' };
  }
  throw new ApiError(406, 'NotAcceptable', `only the following media types are accepted: ${acceptedMediaTypes.join(', ')}`);
}
