// ?fieldValidation= of a write (metav1.FieldValidation*): how decoding findings (unknown and
// duplicate fields) are acted on, and the 422 a Strict patch gets for them.

import { ApiError, FieldError, errors } from './status.js';
import { goJSON } from './goCompat.js';

/** The directives upstream accepts, in the order its error message lists them (sorted). */
export const FIELD_VALIDATION_VALUES = ['Ignore', 'Strict', 'Warn'] as const;

/** The ?fieldValidation= of the request. kube-apiserver defaults to Warn; kubectl sends Strict. */
export type FieldValidation = (typeof FIELD_VALIDATION_VALUES)[number];

export function isFieldValidation(v: string): v is FieldValidation {
  return (FIELD_VALIDATION_VALUES as readonly string[]).includes(v);
}

/** What both patchers (mergePatch.ts, jsonPatch.ts) take. */
export interface PatchOptions {
  /** Decides how the body is decoded (and so which 400 message a malformed body gets). Default Warn. */
  fieldValidation?: FieldValidation;
}

/**
 * The 422 kube-apiserver answers when strict field validation fails for a patch:
 * ` "" is invalid: patch: Invalid value: "<patched JSON>": strict decoding error: <e1>, <e2>`.
 */
export function strictDecodingError(patched: unknown, strictErrors: readonly string[]): ApiError {
  return errors.invalid({ group: '', kind: '' }, '', [
    FieldError.invalid('patch', goJSON(patched), `strict decoding error: ${strictErrors.join(', ')}`),
  ]);
}

/**
 * The warnings one strict decoding error becomes (rest.go addStrictDecodingWarnings/parseYAMLWarnings):
 * goyaml's `yaml: unmarshal errors:` (maybe behind `error converting YAML to JSON: `) a line each, any
 * other error as it is.
 */
export function strictDecodingWarnings(err: string): string[] {
  for (const prefix of ['yaml: unmarshal errors:\n', 'error converting YAML to JSON: yaml: unmarshal errors:\n']) {
    if (err.startsWith(prefix)) return err.slice(prefix.length).split('\n').map((s) => s.trim());
  }
  return [err];
}
