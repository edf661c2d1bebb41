// PATCH (handlers/patch.go): the patch is applied to the current object inside the registry's
// guaranteed update, so a patch racing another write is re-applied to the newer state.
import type { FastifyReply } from 'fastify';
import { jsonPatch } from '../../apimachinery/jsonPatch.js';
import { applyMergePatch } from '../../apimachinery/mergePatch.js';
import { Pacer } from '../../apimachinery/pacer.js';
import { errors, FieldError } from '../../apimachinery/status.js';
import { one, parseWriteOptions } from '../listOptions.js';
import { mediaTypeOf, PATCH_MEDIA_TYPES } from '../mediaTypes.js';
import type { Req, RequestScope } from './scope.js';

export async function patchResource(scope: RequestScope, req: Req, reply: FastifyReply) {
  const rest = scope.rest();
  if (!rest.update) throw errors.methodNotAllowed('patch', scope.gr);
  const respond = scope.responder(req);
  const contentType = mediaTypeOf(req.headers['content-type']);
  if (!PATCH_MEDIA_TYPES.includes(contentType)) throw errors.unsupportedMediaType(PATCH_MEDIA_TYPES);
  const opts = parseWriteOptions(req.query, 'PatchOptions');
  if (one(req.query, 'force') !== undefined) {
    throw errors.invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [FieldError.forbidden('force', 'may not be specified for non-apply patch')]);
  }
  const name = scope.nameOf(req);
  const ctx = scope.context(req);
  const isJsonPatch = contentType === 'application/json-patch+json';
  const pace = new Pacer();
  const { entry, warnings } = await rest.update(ctx, name, async (current) => {
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
  }, { ...opts, patch: true });
  return respond(reply, 200, entry, warnings);
}
