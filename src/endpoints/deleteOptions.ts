// DeleteOptions from a DELETE's body and query, decoded as kube decodes metav1.DeleteOptions: a field
// of the wrong JSON type is a 400 worded like encoding/json's UnmarshalTypeError (never ignored),
// unknown fields are ignored, then apimachinery's validation of the values (422).
import { z } from 'zod';
import { bool, int, one, parseWriteOptions, type Query } from './listOptions.js';
import type { DeleteOptions } from '../apimachinery/options.js';
import { errors, FieldError } from '../apimachinery/status.js';

// Any int64 (zod's int() stops at 2^53); the bounds are exact on the literal (parseDeleteOptions).
const int64 = z.number().refine((n) => Number.isInteger(n) && n >= -(2 ** 63) && n <= 2 ** 63);
const optional = <T extends z.ZodType>(t: T) => t.nullable().optional();

const DeleteOptionsBody = z.looseObject({
  kind: optional(z.string()),
  apiVersion: optional(z.string()),
  gracePeriodSeconds: optional(int64),
  preconditions: optional(z.looseObject({ uid: optional(z.string()), resourceVersion: optional(z.string()) })),
  orphanDependents: optional(z.boolean()),
  propagationPolicy: optional(z.string()),
  dryRun: optional(z.array(z.string())),
  ignoreStoreReadErrorWithClusterBreakingPotential: optional(z.boolean()),
});

/** The Go type each field decodes into, as the UnmarshalTypeError names it. */
const goTypes: Record<string, string> = {
  kind: 'string', apiVersion: 'string', gracePeriodSeconds: 'int64', preconditions: 'v1.Preconditions',
  'preconditions.uid': 'types.UID', 'preconditions.resourceVersion': 'string', orphanDependents: 'bool',
  propagationPolicy: 'v1.DeletionPropagation', dryRun: '[]string', 'dryRun[]': 'string',
  ignoreStoreReadErrorWithClusterBreakingPotential: 'bool',
};

function jsonTypeOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return `number ${String(v)}`;
  return typeof v === 'object' ? 'object' : typeof v;
}

function decodeError(body: unknown, path: PropertyKey[]): string {
  let value: unknown = body;
  for (const p of path) value = (value as Record<PropertyKey, unknown>)[p];
  const named = path.filter((p) => typeof p === 'string').join('.');
  const goType = goTypes[path.some((p) => typeof p === 'number') ? `${named}[]` : named] ?? 'interface {}';
  const what = typeof value === 'number' ? jsonTypeOf(value) : jsonTypeOf(value).split(' ')[0];
  return `json: cannot unmarshal ${what} into Go struct field DeleteOptions.${named} of type ${goType}`;
}

/**
 * `fractionLiterals`: top-level numbers the body wrote as `5.0` or `1e2`; JSON.parse made integers of
 * them, Go's decoder refuses them for an int64 field (and the DELETE must not happen).
 */
export function parseDeleteOptions(rawBody: unknown, q: Query, fractionLiterals?: Map<string, string>): { options: DeleteOptions; dryRun: boolean } {
  const body = rawBody ?? {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw errors.badRequest(`json: cannot unmarshal ${jsonTypeOf(body).split(' ')[0]} into Go value of type v1.DeleteOptions`);
  }
  // Judged on the literal as written where a double would not be exact: any int64, nothing else.
  const written = fractionLiterals?.get('gracePeriodSeconds');
  if (written !== undefined && typeof (body as { gracePeriodSeconds?: unknown }).gracePeriodSeconds === 'number') {
    const exact = /^-?[0-9]+$/.test(written) ? BigInt(written) : undefined;
    if (exact === undefined || exact < -(2n ** 63n) || exact >= 2n ** 63n) {
      throw errors.badRequest(`json: cannot unmarshal number ${written} into Go struct field DeleteOptions.gracePeriodSeconds of type int64`);
    }
  }
  const parsed = DeleteOptionsBody.safeParse(body);
  if (!parsed.success) throw errors.badRequest(decodeError(body, parsed.error.issues[0].path));
  const b = parsed.data;
  const qOrphan = bool(q, 'orphanDependents');
  const options: DeleteOptions = {
    preconditions: b.preconditions ? { uid: b.preconditions.uid ?? undefined, resourceVersion: b.preconditions.resourceVersion ?? undefined } : undefined,
    propagationPolicy: (b.propagationPolicy ?? one(q, 'propagationPolicy')) as DeleteOptions['propagationPolicy'],
    orphanDependents: b.orphanDependents ?? qOrphan,
    gracePeriodSeconds: b.gracePeriodSeconds ?? int(q, 'gracePeriodSeconds'),
  };
  const { dryRun } = parseWriteOptions({ ...q, dryRun: [...(b.dryRun ?? []), ...([] as string[]).concat(q.dryRun ?? [])] }, 'DeleteOptions');
  const errs: FieldError[] = [];
  const p = options.propagationPolicy;
  if (p !== undefined && !['Foreground', 'Background', 'Orphan'].includes(p)) {
    errs.push(FieldError.notSupported('propagationPolicy', p, ['Foreground', 'Background', 'Orphan', 'nil']));
  }
  if (options.orphanDependents !== undefined && p) {
    errs.push(FieldError.invalid('propagationPolicy', p, 'orphanDependents and deletionPropagation cannot be both set'));
  }
  if (options.gracePeriodSeconds !== undefined && options.gracePeriodSeconds < 0) {
    errs.push(FieldError.invalid('gracePeriodSeconds', options.gracePeriodSeconds, 'must be greater than or equal to 0'));
  }
  if (errs.length) throw errors.invalid({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', errs);
  return { options, dryRun };
}
