// Errors are values carrying a Kubernetes reason; toStatus() is the one place they become metav1.Status.

import { GoLiteral, goQuote } from './goCompat.js';

export type StatusReason =
  | 'BadRequest' | 'Unauthorized' | 'Forbidden' | 'NotFound' | 'AlreadyExists' | 'Conflict'
  | 'Gone' | 'Invalid' | 'ServerTimeout' | 'Timeout' | 'TooManyRequests' | 'MethodNotAllowed'
  | 'NotAcceptable' | 'RequestEntityTooLarge' | 'UnsupportedMediaType' | 'InternalError'
  | 'Expired' | 'ServiceUnavailable';

export interface StatusCause { reason?: string; message?: string; field?: string }

export interface StatusDetails {
  name?: string; group?: string; kind?: string; uid?: string;
  causes?: StatusCause[]; retryAfterSeconds?: number;
}

export interface Status {
  /** ListMeta: only an expired continue carries something (a token to go on at the latest state). */
  kind: 'Status'; apiVersion: 'v1'; metadata: { continue?: string };
  status: 'Failure' | 'Success'; message?: string; reason?: StatusReason;
  details?: StatusDetails; code: number;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
    readonly listMeta: { continue?: string } = {},
  ) {
    super(message);
  }

  toStatus(): Status {
    const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: { ...this.listMeta }, status: 'Failure', message: this.message, reason: this.reason, code: this.code };
    if (this.details) s.details = this.details;
    return s;
  }
}

/** A group-qualified resource: "llamas.farm.example.com" is how upstream names it in messages. */
export interface GroupResource { group: string; resource: string }

export function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

// Go's StatusDetails fields are omitempty: a core resource ("namespaces") has no "group" key.
const named = (gr: GroupResource, name: string): StatusDetails =>
  ({ ...(name ? { name } : {}), ...(gr.group ? { group: gr.group } : {}), ...(gr.resource ? { kind: gr.resource } : {}) });

export const errors = {
  notFound: (gr: GroupResource, name: string) =>
    new ApiError(404, 'NotFound', `${qualified(gr)} "${name}" not found`, named(gr, name)),
  alreadyExists: (gr: GroupResource, name: string) =>
    new ApiError(409, 'AlreadyExists', `${qualified(gr)} "${name}" already exists`, named(gr, name)),
  conflict: (gr: GroupResource, name: string, why: string) =>
    new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`, named(gr, name)),
  /** kind here is the Kind (e.g. "Llama"), as upstream's NewInvalid uses the GroupKind. */
  invalid: (groupKind: { group: string; kind: string }, name: string, causes: FieldError[]) => {
    const gk = groupKind.group ? `${groupKind.kind}.${groupKind.group}` : groupKind.kind;
    // ErrorList.ToAggregate drops repeated messages (the causes keep them).
    const unique = [...new Set(causes.map(String))];
    const msg = unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
    // Empty name/group/kind are omitted, as Go's omitempty does.
    const details: StatusDetails = { ...(name ? { name } : {}), ...(groupKind.group ? { group: groupKind.group } : {}), ...(groupKind.kind ? { kind: groupKind.kind } : {}) };
    details.causes = causes.map((c) => ({ reason: c.type, message: c.detailMessage(), field: c.field }));
    return new ApiError(422, 'Invalid', `${gk} "${name}" is invalid: ${msg}`, details);
  },
  badRequest: (message: string) => new ApiError(400, 'BadRequest', message),
  unauthorized: (message = 'Unauthorized') => new ApiError(401, 'Unauthorized', message),
  forbidden: (message: string, details?: StatusDetails) => new ApiError(403, 'Forbidden', message, details),
  /** `continueToken`: where an expired list may go on, inconsistently, at the latest state (store.go handleCompactedErrorForPaging). */
  expired: (message: string, continueToken?: string) => new ApiError(410, 'Expired', message, undefined, continueToken ? { continue: continueToken } : {}),
  gone: (message: string) => new ApiError(410, 'Gone', message),
  methodNotAllowed: (verb: string, gr: GroupResource) =>
    new ApiError(405, 'MethodNotAllowed', `${verb} is not supported on resources of kind "${qualified(gr)}"`),
  notAcceptable: (accepted: string[]) =>
    new ApiError(406, 'NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`),
  unsupportedMediaType: (accepted: string[]) =>
    new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`),
  tooLarge: (message = 'the request is too large') => new ApiError(413, 'RequestEntityTooLarge', message),
  serviceUnavailable: (message: string) => new ApiError(503, 'ServiceUnavailable', message),
  tooManyRequests: (message: string, retryAfterSeconds: number) => new ApiError(429, 'TooManyRequests', message, { retryAfterSeconds }),
  timeout: (message: string, retryAfterSeconds = 1) =>
    new ApiError(504, 'Timeout', message, { retryAfterSeconds }),
  /**
   * storage.NewTooLargeResourceVersionError: the client asked for a resourceVersion this server has not reached.
   * The watch cache suggests a retry in 1 s, the etcd store none (0 is left out, as Go's omitempty).
   */
  tooLargeResourceVersion: (requested: number | string, current: number, retryAfterSeconds = 1) =>
    // NewTimeoutError prefixes "Timeout: ".
    new ApiError(504, 'Timeout', `Timeout: Too large resource version: ${requested}, current: ${current}`,
      { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], ...(retryAfterSeconds > 0 && { retryAfterSeconds }) }),
  internal: (message: string) => new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }),
  pathNotFound: () => new ApiError(404, 'NotFound', 'the server could not find the requested resource', {}),
};

// field.Error from k8s.io/apimachinery/pkg/util/validation/field: its String() forms the Invalid message.
export type FieldErrorType =
  | 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueNotSupported' | 'FieldValueForbidden'
  | 'FieldValueDuplicate' | 'FieldValueTooLong' | 'FieldValueTooMany' | 'FieldValueTypeInvalid';

const typeText: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value', FieldValueInvalid: 'Invalid value', FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden', FieldValueDuplicate: 'Duplicate value', FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many', FieldValueTypeInvalid: 'Invalid value',
};

export class FieldError {
  constructor(
    readonly type: FieldErrorType,
    readonly field: string,
    readonly detail = '',
    readonly badValue?: unknown,
    readonly hasBadValue = false,
  ) {}

  static required(field: string, detail = '') { return new FieldError('FieldValueRequired', field, detail); }
  static forbidden(field: string, detail: string) { return new FieldError('FieldValueForbidden', field, detail); }
  static invalid(field: string, value: unknown, detail: string) { return new FieldError('FieldValueInvalid', field, detail, value, true); }
  static notSupported(field: string, value: unknown, allowed: string[]) {
    return new FieldError('FieldValueNotSupported', field, `supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`, value, true);
  }
  static typeInvalid(field: string, value: unknown, detail: string) { return new FieldError('FieldValueTypeInvalid', field, detail, value, true); }

  /** ErrorBody(): "<type text>: <value>: <detail>" as upstream prints it. */
  detailMessage(): string {
    let s = typeText[this.type];
    // ErrorBody prints no value for Required, Forbidden and TooLong.
    if (this.hasBadValue && this.type !== 'FieldValueRequired' && this.type !== 'FieldValueForbidden' && this.type !== 'FieldValueTooLong') {
      s += `: ${formatValue(this.badValue)}`;
    }
    if (this.detail) s += `: ${this.detail}`;
    return s;
  }

  toString(): string { return this.field ? `${this.field}: ${this.detailMessage()}` : this.detailMessage(); }
}

function formatValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof GoLiteral) return v.text;
  // Go's %#v of a []string (e.g. DeleteOptions/CreateOptions dryRun), as field.Error.ErrorBody prints it.
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return `[]string{${v.map((x) => JSON.stringify(x)).join(', ')}}`;
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

export function isApiError(e: unknown): e is ApiError { return e instanceof ApiError; }
