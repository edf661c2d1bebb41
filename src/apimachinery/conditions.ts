// metav1.Condition's rules with k8s.io/apimachinery v0.33's messages (pkg/apis/meta/v1/validation
// ValidateConditions / ValidateCondition: the version of the kube-apiserver we match; later versions
// reword the required fields), for a `conditions` list that already passed the schema (so each field
// is absent or of its JSON type; absent is Go's zero value).
import { qualifiedNameErrors } from './names.js';
import { FieldError } from './status.js';

export interface ConditionInput {
  type?: string;
  status?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

const statuses = ['False', 'True', 'Unknown']; // sets.NewString(...).List(): sorted
const maxReasonLen = 1024;
const maxMessageLen = 32 * 1024;
const reasonFmt = '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?';
const reasonRe = new RegExp(`^${reasonFmt}$`);
const reasonErrMsg = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
// validation.RegexError(msg, fmt, examples...)
const reasonExamples = ['my_name', 'MY_NAME', 'MyName', 'ReasonA,ReasonB', 'ReasonA:ReasonB'];
const reasonError = `${reasonErrMsg} (e.g. ${reasonExamples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${reasonFmt}')`;

/** Go's len(): UTF-8 bytes. */
const byteLen = (s: string) => Buffer.byteLength(s, 'utf8');

/** RFC 3339 as metav1.Time decodes it; Go's zero time ("0001-01-01T00:00:00Z") counts as unset. */
const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function validateConditions(conditions: readonly ConditionInput[] | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const firstIndex = new Map<string, number>();
  (conditions ?? []).forEach((c, i) => {
    const type = c.type ?? '';
    if (firstIndex.has(type)) errs.push(new FieldError('FieldValueDuplicate', `${path}[${i}].type`, '', type, true));
    else firstIndex.set(type, i);
    errs.push(...validateCondition(c, `${path}[${i}]`));
  });
  return errs;
}

export function validateCondition(c: ConditionInput, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const type = c.type ?? '';
  // ValidateLabelName: an empty type is an invalid qualified name, not a missing value.
  for (const m of qualifiedNameErrors(type)) errs.push(FieldError.invalid(`${path}.type`, type, m));

  const status = c.status ?? '';
  if (!statuses.includes(status)) errs.push(FieldError.notSupported(`${path}.status`, status, statuses));

  if ((c.observedGeneration ?? 0) < 0) {
    errs.push(FieldError.invalid(`${path}.observedGeneration`, c.observedGeneration, 'must be greater than or equal to zero'));
  }

  const t = c.lastTransitionTime;
  if (t === undefined || t === '' || isZeroTime(t)) {
    errs.push(FieldError.required(`${path}.lastTransitionTime`, 'must be set'));
  } else if (!rfc3339.test(t) || Number.isNaN(Date.parse(t))) {
    // Our schema layer's wording for a date-time that does not parse (Go would fail decoding instead).
    errs.push(FieldError.typeInvalid(`${path}.lastTransitionTime`, t, `${path}.lastTransitionTime in body must be of type date-time: ${JSON.stringify(t)}`));
  }

  const reason = c.reason ?? '';
  if (reason === '') errs.push(FieldError.required(`${path}.reason`, 'must be set'));
  else {
    if (!reasonRe.test(reason)) errs.push(FieldError.invalid(`${path}.reason`, reason, reasonError));
    if (byteLen(reason) > maxReasonLen) errs.push(new FieldError('FieldValueTooLong', `${path}.reason`, `may not be more than ${maxReasonLen} bytes`));
  }

  if (byteLen(c.message ?? '') > maxMessageLen) {
    errs.push(new FieldError('FieldValueTooLong', `${path}.message`, `may not be more than ${maxMessageLen} bytes`));
  }
  return errs;
}

function isZeroTime(t: string): boolean {
  return /^0001-01-01[Tt]00:00:00(\.0+)?([Zz]|\+00:00|-00:00)$/.test(t);
}
