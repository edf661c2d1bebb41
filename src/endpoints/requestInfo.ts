// What a request asks for, derived from method + path like k8s.io/apiserver's RequestInfoFactory;
// authorization (SubjectAccessReview attributes) is made from it.

export type { RequestInfo } from '../apimachinery/types.js';
import type { RequestInfo } from '../apimachinery/types.js';

const nonResourceVerbs: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'delete', OPTIONS: 'options' };

export function requestInfo(method: string, url: string): RequestInfo {
  const q = url.indexOf('?');
  // Authorization must see what the handlers will serve: the decoded path.
  const path = decodePath(q < 0 ? url : url.slice(0, q));
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const nonResource: RequestInfo = {
    isResourceRequest: false, path, verb: (nonResourceVerbs[method] ?? method.toLowerCase()),
    apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '',
  };
  // splitPath: trims the ends only, so "namespaces//llamas" keeps its empty namespace.
  let parts = path.replace(/^\/+|\/+$/g, '').split('/');
  let apiGroup = '';
  if (parts[0] === 'apis') {
    if (parts.length < 3) return nonResource;
    apiGroup = parts[1];
    parts = parts.slice(2);
  } else if (parts[0] === 'api') {
    if (parts.length < 2) return nonResource;
    parts = parts.slice(1);
  } else return nonResource;
  const apiVersion = parts.shift()!;
  let watchPath = false;
  if (parts[0] === 'watch') { watchPath = true; parts.shift(); }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    // "namespaces/x" is the namespace object itself; anything further is a resource inside it.
    if (parts.length > 2) parts = parts.slice(2);
  }
  if (parts.length === 0) return nonResource;
  const [resource, name = '', subresource = ''] = parts;
  const isWatch = watchPath || query.get('watch') === 'true' || query.get('watch') === '1';
  let verb: string;
  switch (method) {
    case 'GET': case 'HEAD': verb = isWatch ? 'watch' : name ? 'get' : 'list'; break;
    case 'POST': verb = 'create'; break;
    case 'PUT': verb = 'update'; break;
    case 'PATCH': verb = 'patch'; break;
    case 'DELETE': verb = name ? 'delete' : 'deletecollection'; break;
    default: verb = method.toLowerCase();
  }
  // A list/watch narrowed to one name is authorized as that name (upstream does the same).
  let effectiveName = name;
  if (!name && (verb === 'list' || verb === 'watch')) {
    const m = /(?:^|,)metadata\.name==?([^,]*)/.exec(query.get('fieldSelector') ?? '');
    if (m) effectiveName = m[1];
  }
  const info: RequestInfo = { isResourceRequest: true, path, verb, apiGroup, apiVersion, namespace, resource, subresource, name: effectiveName };
  if (verb === 'list' || verb === 'watch' || verb === 'deletecollection') {
    const ls = query.get('labelSelector');
    const fs = query.get('fieldSelector');
    if (ls) info.labelSelector = ls;
    if (fs) info.fieldSelector = fs;
  }
  return info;
}

function decodePath(p: string): string {
  try { return decodeURIComponent(p); } catch { return p; }
}
