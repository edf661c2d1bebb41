// JSON merge patch (RFC 7386) with kube-apiserver's exact behaviour.
//
// kube-apiserver (handlers/patch.go) applies it with gopkg.in/evanphx/json-patch.v4, whose
// semantics differ from the RFC in places kubectl users can observe (null and scalar patches,
// nulls pruned from inserted values, ...). applyMergePatch is a faithful port of that library and
// of the handler's error mapping, checked against the real Go code: a body that does not decode
// is a 400 BadRequest, its message depending on ?fieldValidation.
// Inputs are never mutated. Object members are always created as own data properties, so a
// "__proto__" member is an ordinary key (as in Go and JSON.parse) and never reaches a prototype.

import { cloneJson as clone, getOwn, isJsonObject as isObject, pruneNulls, setOwn, type Json, type JsonObject } from './jsonValue.js';
import { errors } from './status.js';
import { goJsonType } from './goCompat.js';
import type { PatchOptions } from './fieldValidation.js';

// ---------------------------------------------------------------------------------------------
// JSON merge patch (evanphx/json-patch.v4 MergePatch)
// ---------------------------------------------------------------------------------------------

/**
 * Applies a JSON merge patch as kube-apiserver does. RFC 7386 semantics (null deletes, objects
 * merge recursively, anything else replaces), except at the top level, where — like upstream —
 * a null or scalar patch is a 400 (`Invalid JSON Patch`, or with Warn/Strict a decoding error)
 * and an array is returned as is (so that decoding it into an object then fails). Nulls nested in
 * a value that is inserted (rather than merged) are pruned from its objects, as upstream does.
 */
export function applyMergePatch(target: unknown, patch: unknown, opts: PatchOptions = {}): unknown {
  const fv = opts.fieldValidation ?? 'Warn';
  if ((fv === 'Strict' || fv === 'Warn') && patch !== null && !isObject(patch)) {
    throw errors.badRequest(`error decoding patch: json: cannot unmarshal ${goJsonType(patch)} into Go value of type map[string]interface {}`);
  }
  if (isObject(patch)) {
    if (!isObject(target)) return pruneNulls(clone(patch));
    const doc = clone(target) as JsonObject;
    mergeDocs(doc, patch);
    return doc;
  }
  if (Array.isArray(patch)) return pruneNulls(clone(patch));
  throw errors.badRequest('Invalid JSON Patch');
}

function mergeDocs(doc: JsonObject, patch: JsonObject): void {
  for (const k of Object.keys(patch)) {
    const v = patch[k];
    if (v === null || v === undefined) {
      delete doc[k]; // delete only ever removes an own property
      continue;
    }
    const cur = getOwn(doc, k);
    if (cur === undefined || cur === null) setOwn(doc, k, pruneNulls(clone(v)));
    else setOwn(doc, k, merge(cur, v));
  }
}

function merge(cur: Json, patch: Json): Json {
  if (!isObject(cur)) return pruneNulls(clone(patch));
  if (!isObject(patch)) return clone(patch); // upstream does not prune here
  mergeDocs(cur, patch);
  return cur;
}
