// ListOptions / write options from the query string, validated as apimachinery's validation does.
import { isPrint } from '../apimachinery/goCompat.js';
import { errors, FieldError } from '../apimachinery/status.js';
import { FIELD_VALIDATION_VALUES, isFieldValidation, type FieldValidation } from '../apimachinery/fieldValidation.js';
import type { ListOptions, WriteOptions } from '../apimachinery/options.js';

export type { ListOptions, WriteOptions } from '../apimachinery/options.js';

export type Query = Record<string, string | string[] | undefined>;

export function one(q: Query, key: string): string | undefined {
  const v = q[key];
  return Array.isArray(v) ? v[0] : v;
}

/** Convert_Slice_string_To_bool: "0" and "false" (any case) are false, every other value true. */
export function bool(q: Query, key: string): boolean | undefined {
  const v = one(q, key);
  if (v === undefined) return undefined;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** An int64 query parameter (strconv.ParseInt(v, 10, 64)): anything else is a 400. */
export function int(q: Query, key: string): number | undefined {
  const v = one(q, key);
  if (v === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(v)) throw errors.badRequest(`invalid value for ${key}: ${JSON.stringify(v)}: must be an integer`);
  const n = BigInt(v);
  if (n > 9223372036854775807n || n < -9223372036854775808n) throw errors.badRequest(`invalid value for ${key}: ${JSON.stringify(v)}: value out of range`);
  return Number(n);
}


const invalidListOptions = (errs: FieldError[]) => errors.invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);

export function parseListOptions(q: Query, forceWatch = false): ListOptions {
  const o: ListOptions = {
    labelSelector: one(q, 'labelSelector') ?? '',
    fieldSelector: one(q, 'fieldSelector') ?? '',
    watch: forceWatch || (bool(q, 'watch') ?? false),
    allowWatchBookmarks: bool(q, 'allowWatchBookmarks') ?? false,
    resourceVersion: one(q, 'resourceVersion') ?? '',
    resourceVersionMatch: one(q, 'resourceVersionMatch') ?? '',
    timeoutSeconds: int(q, 'timeoutSeconds'),
    limit: Math.max(int(q, 'limit') ?? 0, 0),
    continue: one(q, 'continue') ?? '',
    sendInitialEvents: bool(q, 'sendInitialEvents'),
  };
  const errs = o.watch ? watchErrors(o) : listErrors(o);
  if (errs.length) throw invalidListOptions(errs);
  return o;
}

function listErrors(o: ListOptions): FieldError[] {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (match) {
    if (!o.resourceVersion) errs.push(FieldError.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (o.continue) errs.push(FieldError.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== 'Exact' && match !== 'NotOlderThan') errs.push(FieldError.notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
    if (match === 'Exact' && o.resourceVersion === '0') errs.push(FieldError.forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (o.sendInitialEvents !== undefined) errs.push(FieldError.forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return errs;
}

function watchErrors(o: ListOptions): FieldError[] {
  const errs: FieldError[] = [];
  const match = o.resourceVersionMatch;
  if (o.sendInitialEvents !== undefined && match !== 'NotOlderThan') {
    errs.push(FieldError.forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
  }
  if (match) {
    if (o.sendInitialEvents === undefined) errs.push(FieldError.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    if (match !== 'NotOlderThan') errs.push(FieldError.notSupported('resourceVersionMatch', match, ['NotOlderThan']));
    if (!o.allowWatchBookmarks) errs.push(FieldError.forbidden('allowWatchBookmarks', 'allowWatchBookmarks must be set to true when sendInitialEvents is provided'));
  }
  return errs;
}



/** CreateOptions / UpdateOptions / PatchOptions query parameters, checked in upstream's order (ValidatePatchOptions & co.). */
export function parseWriteOptions(q: Query, kind: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions', patch: { apply: boolean } = { apply: false }): WriteOptions {
  const errs: FieldError[] = [];
  const fieldManager = kind === 'DeleteOptions' ? undefined : one(q, 'fieldManager');
  const forceText = one(q, 'force');
  if (kind === 'PatchOptions') {
    if (patch.apply && !fieldManager) errs.push(FieldError.required('fieldManager', 'is required for apply patch'));
    if (!patch.apply && forceText !== undefined) errs.push(FieldError.forbidden('force', 'may not be specified for non-apply patch'));
  }
  if (fieldManager) errs.push(...fieldManagerErrors(fieldManager));
  const dry = q['dryRun'];
  const dryValues = dry === undefined ? [] : Array.isArray(dry) ? dry : [dry];
  if (dryValues.some((d) => d !== 'All')) errs.push(FieldError.notSupported('dryRun', dryValues, ['All']));
  const fv = one(q, 'fieldValidation') ?? '';
  let fieldValidation: FieldValidation = 'Strict';
  if (isFieldValidation(fv)) fieldValidation = fv;
  // ValidateFieldValidation lists sets.NewString("", Ignore, Warn, Strict).List(): sorted, the empty value first.
  else if (fv !== '') errs.push(FieldError.notSupported('fieldValidation', fv, ['', ...FIELD_VALIDATION_VALUES]));
  // Upstream defaults to Warn when the parameter is absent (kubectl always sends Strict).
  if (fv === '') fieldValidation = 'Warn';
  const force = forceText === undefined ? false : parseForce(forceText);
  if (errs.length) throw errors.invalid({ group: 'meta.k8s.io', kind }, '', errs);
  return { dryRun: dryValues.length > 0, fieldValidation, fieldManager, force };
}

/** ValidateFieldManager: at most 128 bytes, printable characters only (unicode.IsPrint). */
function fieldManagerErrors(fieldManager: string): FieldError[] {
  const errs: FieldError[] = [];
  if (Buffer.byteLength(fieldManager) > 128) errs.push(new FieldError('FieldValueTooLong', 'fieldManager', 'may not be more than 128 bytes'));
  let offset = 0;
  for (const ch of fieldManager) {
    if (!isPrint(ch)) {
      const cp = ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      errs.push(FieldError.invalid('fieldManager', fieldManager, `invalid character U+${cp} (at position ${offset})`));
    }
    offset += Buffer.byteLength(ch);
  }
  return errs;
}

/** The query's force=true|false (strconv.ParseBool); anything else is a decoding error. */
function parseForce(v: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}
