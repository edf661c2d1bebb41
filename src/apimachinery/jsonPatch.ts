// JSON patch (RFC 6902) with kube-apiserver's exact behaviour.
//
// kube-apiserver (handlers/patch.go, jsonPatcher.applyJSPatch) applies it with
// gopkg.in/evanphx/json-patch.v4, whose semantics differ from the RFC in places kubectl users
// can observe (replace of a missing object member adds it, copy from a missing member copies null,
// negative array indices, null patches, ...). jsonPatch is a faithful port of that library and of
// the handler's error mapping, checked against the real Go code:
//   - a body that does not decode         → 400 BadRequest (message depends on ?fieldValidation)
//   - more than 10000 operations          → 413 RequestEntityTooLarge
//   - an operation that does not apply    → 422 Invalid "the server rejected our request due to an
//     error in our request" (NewGenericServerResponse(422, ...) drops the library's reason; it is
//     kept on the error's `cause` for logs)
// Inputs are never mutated. Object members are always created as own data properties, so a
// "__proto__" member is an ordinary key (as in Go and JSON.parse) and never reaches a prototype.

import { cloneJson as clone, getOwn, isJsonObject as isObject, jsonByteSize, jsonEqual, setOwn, type Json, type JsonObject } from './jsonValue.js';
import { ApiError, errors, type StatusCause } from './status.js';
import { atoi, goJsonType } from './goCompat.js';
import { strictDecodingError, type PatchOptions } from './fieldValidation.js';

export interface JsonPatchOutcome {
  /** The patched document (a fresh value; may be an array if the patch replaced the root with one). */
  object: unknown;
  /**
   * Strict-decoding findings about the patch itself, e.g. `json patch unknown field "[0].valu"`.
   * Upstream appends the unknown fields found decoding the patched object after these; then with
   * Warn each is a Warning header, with Strict the lot is a 422 (see strictDecodingError).
   * Always empty with Ignore.
   */
  strictErrors: string[];
}

const maxJSONPatchOperations = 10000;
/** JSONPatchMaxCopyBytes: kube-apiserver caps what `copy` operations may add, in bytes of JSON. */
export const JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

const hasOwn = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

/** A patch operation that does not apply: what NewGenericServerResponse(422, ...) makes of it. */
function notApplicable(reason: string, causes?: StatusCause[]): ApiError {
  const e = new ApiError(422, 'Invalid', 'the server rejected our request due to an error in our request', causes ? { causes } : {});
  Object.defineProperty(e, 'cause', { value: reason, enumerable: false, configurable: true, writable: true });
  return e;
}

class PatchFailure { constructor(readonly reason: string) {} }

/** The accumulated size of `copy` operations passed JSONPatchMaxCopyBytes (evanphx's AccumulatedCopySizeError). */
class CopyLimitExceeded extends PatchFailure {
  constructor(readonly accumulated: number) {
    super(`Unable to complete the copy, the accumulated size increase of copy is ${accumulated}, exceeding the limit ${JSON_PATCH_MAX_COPY_BYTES}`);
  }
}
const fail = (reason: string): never => { throw new PatchFailure(reason); };

// ---------------------------------------------------------------------------------------------
// JSON patch (evanphx/json-patch.v4 Patch.Apply, behind handlers.jsonPatcher.applyJSPatch)
// ---------------------------------------------------------------------------------------------

const opFields = new Set(['op', 'path', 'from', 'value']);

/**
 * Applies an RFC 6902 JSON patch as kube-apiserver does, reporting strict-decoding findings
 * instead of acting on them. Throws ApiError 400 / 413 / 422 (see the file comment).
 */
export function jsonPatch(target: unknown, ops: unknown, opts: PatchOptions = {}): JsonPatchOutcome {
  const fv = opts.fieldValidation ?? 'Warn';
  const strictErrors: string[] = [];
  if (fv === 'Strict' || fv === 'Warn') {
    // kjson.UnmarshalStrict(body, &[]jsonPatchOp): the first type error wins; unknown members are findings.
    if (ops !== null && !Array.isArray(ops)) {
      throw errors.badRequest(`error decoding patch: json: cannot unmarshal ${goJsonType(ops)} into Go value of type []handlers.jsonPatchOp`);
    }
    (ops ?? []).forEach((op: unknown, i: number) => {
      if (op === null) return;
      if (!isObject(op)) {
        throw errors.badRequest(`error decoding patch: json: cannot unmarshal ${goJsonType(op)} into Go value of type handlers.jsonPatchOp`);
      }
      for (const k of Object.keys(op)) {
        if (!opFields.has(k)) strictErrors.push(`json patch unknown field "[${i}].${k}"`);
        else if (k !== 'value' && op[k] !== null && typeof op[k] !== 'string') {
          throw errors.badRequest(`error decoding patch: json: cannot unmarshal ${goJsonType(op[k])} into Go struct field jsonPatchOp.${k} of type string`);
        }
      }
    });
  }
  // jsonpatch.DecodePatch(body): a JSON array of objects (or nulls), or null.
  if (ops !== null && !Array.isArray(ops)) {
    throw errors.badRequest(`json: cannot unmarshal ${goJsonType(ops)} into Go value of type jsonpatch.Patch`);
  }
  const list: unknown[] = ops ?? [];
  const bad = list.find((op) => op !== null && !isObject(op));
  if (bad !== undefined) {
    throw errors.badRequest(`json: cannot unmarshal ${goJsonType(bad)} into Go value of type jsonpatch.Operation`);
  }
  if (list.length > maxJSONPatchOperations) {
    throw errors.tooLarge(`Request entity too large: The allowed maximum operations in a JSON patch is ${maxJSONPatchOperations}, got ${list.length}`);
  }
  try {
    return { object: applyOps(target, list as (JsonObject | null)[]), strictErrors };
  } catch (e) {
    // kube's 422 has only the generic message; the copy limit also names its cause, which a client can act on.
    if (e instanceof CopyLimitExceeded) throw notApplicable(e.reason, [{ reason: 'FieldValueInvalid', message: e.reason, field: 'patch' }]);
    if (e instanceof PatchFailure) throw notApplicable(e.reason);
    throw e;
  }
}

/**
 * applyJsonPatch: jsonPatch() for callers that do not merge strict findings with their own:
 * with Strict they become the 422 at once; with Warn they go to `warn` (Warning headers).
 */
export function applyJsonPatch(
  target: unknown,
  ops: unknown,
  opts: PatchOptions & { warn?: (message: string) => void } = {},
): unknown {
  const { object, strictErrors } = jsonPatch(target, ops, opts);
  if (strictErrors.length) {
    if ((opts.fieldValidation ?? 'Warn') === 'Strict') throw strictDecodingError(object, strictErrors);
    for (const w of strictErrors) opts.warn?.(w);
  }
  return object;
}

/** A container of the document: an object or an array, addressed by a decoded reference token. */
type Container = JsonObject | Json[];

const decodeKey = (k: string) => k.replace(/~[01]/g, (m) => (m === '~1' ? '/' : '~'));

function containerGet(c: Container, key: string): Json | undefined {
  if (!Array.isArray(c)) return getOwn(c, key); // missing and null are alike upstream
  let idx = atoi(key);
  if (idx === undefined) return fail(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  if (idx < 0) {
    if (idx < -c.length) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
    idx += c.length;
  }
  if (idx >= c.length) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
  return c[idx];
}

/** Only used by replace, after containerGet succeeded. */
function containerSet(c: Container, key: string, v: Json): void {
  if (!Array.isArray(c)) { setOwn(c, key, v); return; }
  let idx = atoi(key)!;
  if (idx < 0) idx += c.length;
  c[idx] = v;
}

function containerAdd(c: Container, key: string, v: Json): void {
  if (!Array.isArray(c)) { setOwn(c, key, v); return; }
  if (key === '-') { c.push(v); return; }
  let idx = atoi(key);
  if (idx === undefined) return fail(`value was not a proper array index: '${key}'`);
  const size = c.length + 1;
  if (idx >= size) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
  if (idx < 0) {
    if (idx < -size) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
    idx += size;
  }
  c.splice(idx, 0, v);
}

function containerRemove(c: Container, key: string): void {
  if (!Array.isArray(c)) {
    if (!hasOwn(c, key)) return fail(`Unable to remove nonexistent key: ${key}: missing value`);
    delete c[key];
    return;
  }
  let idx = atoi(key);
  if (idx === undefined) return fail(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  if (idx >= c.length) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
  if (idx < 0) {
    if (idx < -c.length) return fail(`Unable to access invalid index: ${idx}: invalid index referenced`);
    idx += c.length;
  }
  c.splice(idx, 1);
}

/** findObject: the container holding the last token of `path`, and that token decoded. */
function findObject(doc: Container, path: string): { con: Container; key: string } | undefined {
  const split = path.split('/');
  if (split.length < 2) return undefined;
  let con: Container = doc;
  for (const part of split.slice(1, -1)) {
    let next: Json | undefined;
    try {
      next = containerGet(con, decodeKey(part));
    } catch (e) {
      if (e instanceof PatchFailure) return undefined;
      throw e;
    }
    if (next === undefined || next === null || typeof next !== 'object') return undefined;
    con = next;
  }
  return { con, key: decodeKey(split[split.length - 1]) };
}

/** A string member of an operation; upstream fails on a missing, null or non-string one. */
function stringField(op: JsonObject, name: 'path' | 'from'): string | undefined {
  const v = getOwn(op, name);
  return typeof v === 'string' ? v : undefined;
}

function applyOps(target: unknown, ops: (JsonObject | null)[]): Json {
  if (typeof target !== 'object' || target === null) fail('document is not a JSON object or array');
  let doc = clone(target) as Container;
  let copied = 0;
  for (const op of ops) {
    const kind = op && typeof getOwn(op, 'op') === 'string' ? (op.op as string) : 'unknown';
    if (!op) fail(`Unexpected kind: ${kind}`);
    const o = op as JsonObject;
    const hasValue = hasOwn(o, 'value');
    const value = (): Json => (hasValue ? clone(o.value) : null);
    switch (kind) {
      case 'add': {
        const path = stringField(o, 'path');
        if (path === undefined) fail('add operation failed to decode path: missing value');
        const f = findObject(doc, path!) ?? fail(`add operation does not apply: doc is missing path: "${path}": missing value`);
        containerAdd(f.con, f.key, value());
        break;
      }
      case 'remove': {
        const path = stringField(o, 'path');
        if (path === undefined) fail('remove operation failed to decode path: missing value');
        const f = findObject(doc, path!) ?? fail(`remove operation does not apply: doc is missing path: "${path}": missing value`);
        containerRemove(f.con, f.key);
        break;
      }
      case 'replace': {
        const path = stringField(o, 'path');
        if (path === undefined) fail('replace operation failed to decode path');
        if (path === '') {
          // Upstream wraps a nil error here, so a value that is not an object or array is a silent no-op.
          const v = o.value;
          if (hasValue && typeof v === 'object' && v !== null) doc = clone(v) as Container;
          break;
        }
        const f = findObject(doc, path!) ?? fail(`replace operation does not apply: doc is missing path: ${path}: missing value`);
        try {
          containerGet(f.con, f.key); // a missing object member is fine: upstream's replace then adds it
        } catch (e) {
          if (e instanceof PatchFailure) fail(`replace operation does not apply: doc is missing key: ${path}: missing value`);
          throw e;
        }
        containerSet(f.con, f.key, value());
        break;
      }
      case 'move': {
        const from = stringField(o, 'from');
        if (from === undefined) fail('move operation failed to decode from');
        const src = findObject(doc, from!) ?? fail(`move operation does not apply: doc is missing from path: ${from}: missing value`);
        const val = containerGet(src.con, src.key) ?? null;
        containerRemove(src.con, src.key);
        const path = stringField(o, 'path');
        if (path === undefined) fail('move operation failed to decode path');
        const dst = findObject(doc, path!) ?? fail(`move operation does not apply: doc is missing destination path: ${path}: missing value`);
        containerAdd(dst.con, dst.key, val);
        break;
      }
      case 'test': {
        const path = stringField(o, 'path');
        if (path === undefined) fail('test operation failed to decode path');
        if (path === '') {
          if (!hasValue || !jsonEqual(doc, o.value)) fail(`testing value ${path} failed: test failed`);
          break;
        }
        const f = findObject(doc, path!) ?? fail(`test operation does not apply: is missing path: ${path}: missing value`);
        const val = containerGet(f.con, f.key);
        if (val === undefined || val === null) {
          // a missing or null member passes only a test for null (upstream panics when value is absent)
          if (hasValue && o.value === null) break;
          fail(`testing value ${path} failed: test failed`);
        }
        if (!hasValue || !jsonEqual(val!, o.value)) fail(`testing value ${path} failed: test failed`);
        break;
      }
      case 'copy': {
        const from = stringField(o, 'from');
        if (from === undefined) fail('copy operation failed to decode from');
        const src = findObject(doc, from!) ?? fail(`copy operation does not apply: doc is missing from path: ${from}: missing value`);
        const val = containerGet(src.con, src.key) ?? null; // a missing object member copies as null
        const path = stringField(o, 'path');
        if (path === undefined) fail('copy operation failed to decode path: missing value');
        const dst = findObject(doc, path!) ?? fail(`copy operation does not apply: doc is missing destination path: ${path}: missing value`);
        // Sized before copying, so doubling a subtree 40 times stops at the limit, not at the heap's.
        // The document stays bounded (target + copies under the limit + the body's values), so is this walk.
        copied += jsonByteSize(val);
        if (copied > JSON_PATCH_MAX_COPY_BYTES) throw new CopyLimitExceeded(copied);
        containerAdd(dst.con, dst.key, clone(val));
        break;
      }
      default:
        fail(`Unexpected kind: ${kind}`);
    }
  }
  return doc;
}
