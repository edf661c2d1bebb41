// PATCH (handlers/patch.go): the patch is applied to the current object inside the registry's
// guaranteed update, so a patch racing another write is re-applied to the newer state. Server-side
// apply (application/apply-patch+yaml) merges through the field manager and may create the object.
import type { FastifyReply } from 'fastify';
import { jsonPatch } from '../../apimachinery/jsonPatch.js';
import { applyMergePatch } from '../../apimachinery/mergePatch.js';
import type { WriteOptions } from '../../apimachinery/options.js';
import { Pacer } from '../../apimachinery/pacer.js';
import { errors } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { Decoded, RequestContext } from '../../registry/rest.js';
import { parseWriteOptions } from '../listOptions.js';
import { APPLY_PATCH_MEDIA_TYPE, mediaTypeOf, PATCH_MEDIA_TYPES } from '../mediaTypes.js';
import type { Req, RequestScope } from './scope.js';

export async function patchResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.update) throw errors.methodNotAllowed('patch', scope.gr);
  const respond = scope.responder(req);
  const contentType = mediaTypeOf(req.headers['content-type']);
  const apply = contentType === APPLY_PATCH_MEDIA_TYPE;
  if (!PATCH_MEDIA_TYPES.includes(contentType) || (apply && !rest.fieldManager)) throw errors.unsupportedMediaType(PATCH_MEDIA_TYPES);
  const opts = parseWriteOptions(req.query, 'PatchOptions', { apply });
  const name = scope.nameOf(req);
  const ctx = scope.context(req);
  const manager = scope.managerOf(req, opts.fieldManager);
  const patched = apply ? applied(scope, req, ctx, name, opts) : nonApply(scope, req, ctx, name, opts, contentType);
  const { entry, warnings, created } = await rest.update(ctx, name, patched.fromCurrent,
    { ...opts, fieldManager: manager, patch: true, createInfo: patched.fromNothing });
  return respond(reply, created ? 201 : 200, entry, warnings);
}

interface Patched { fromCurrent: (current: KubeObject) => Promise<Decoded>; fromNothing?: () => Promise<Decoded> }

function nonApply(scope: RequestScope, req: Req, ctx: RequestContext, name: string, opts: WriteOptions, contentType: string): Patched {
  const isJsonPatch = contentType === 'application/json-patch+json';
  const pace = new Pacer();
  return {
    fromCurrent: async (current) => {
      const fv = { fieldValidation: opts.fieldValidation };
      // Findings about the patch itself come first, then unknown fields of the patched object (as upstream).
      const { object: patched, strictErrors } = isJsonPatch
        ? jsonPatch(current, req.body, fv)
        : { object: applyMergePatch(current, req.body, fv), strictErrors: [] as string[] };
      const duplicates = opts.fieldValidation === 'Ignore' ? [] : (req.duplicateFields ?? []).map((d) => (isJsonPatch ? `json patch ${d}` : d));
      await pace.breathe();
      const object = scope.decodeBody(patched, ctx.namespace);
      scope.checkName(object, name);
      return { object, findings: [...duplicates, ...strictErrors] };
    },
  };
}

/** applyPatcher: the configuration merged into the live object (or an empty one, which creates it). */
function applied(scope: RequestScope, req: Req, ctx: RequestContext, name: string, opts: WriteOptions): Patched {
  const fieldManager = scope.rest().fieldManager!;
  const config = req.body;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw errors.badRequest('error decoding patch: the patch must be a YAML or JSON object');
  }
  const merge = async (live: KubeObject): Promise<Decoded> => {
    const merged = await fieldManager.apply(live, config, opts.fieldManager!, opts.force ?? false, new Pacer());
    // After a successful apply, repeated keys of the patch are a strict decoding failure (or warnings):
    // applyPatcher decodes it with yaml.UnmarshalStrict, whose error says it was converting YAML to JSON.
    const duplicates = opts.fieldValidation === 'Ignore' ? [] : (req.duplicateFields ?? []).map((e) => `error converting YAML to JSON: ${e}`);
    if (duplicates.length && opts.fieldValidation === 'Strict') throw errors.badRequest(`error strict decoding patch: ${duplicates.join(', ')}`);
    const object = scope.decodeBody(merged, ctx.namespace);
    if (!live.metadata.uid && object.metadata.uid) {
      throw errors.conflict(scope.gr, name, `uid mismatch: the provided object specified uid ${object.metadata.uid}, and no existing object was found`);
    }
    scope.checkName(object, name);
    return { object, findings: duplicates, managed: true };
  };
  return {
    fromCurrent: merge,
    fromNothing: async () => {
      const empty = fieldManager.emptyObject();
      const decoded = await merge(empty);
      await scope.opts.admitCreate?.(scope.gr, ctx.namespace, name);
      return decoded;
    },
  };
}
