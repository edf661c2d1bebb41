// Name and label validation with k8s.io/apimachinery/pkg/util/validation's messages (checked
// against the Go functions): label keys/values and finalizers (qualified names), object names
// (DNS-1123 subdomains), namespaces (DNS-1123 labels).

const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);
const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const labelValueRe = new RegExp(`^${labelValueFmt}$`);
const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const dns1123SubdomainRe = new RegExp(`^${dns1123SubdomainFmt}$`);

const maxLenError = (n: number) => `must be no more than ${n} characters`;
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

/** Go's len(string): bytes of UTF-8 (counted without encoding: this runs per label and finalizer). */
const byteLen = (s: string) => Buffer.byteLength(s, 'utf8');

/** IsDNS1123Subdomain: errors, empty when valid. */
export function dns1123SubdomainErrors(v: string): string[] {
  const errs: string[] = [];
  if (byteLen(v) > 253) errs.push(maxLenError(253));
  if (!dns1123SubdomainRe.test(v)) errs.push(regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, 'example.com'));
  return errs;
}

// The valid case in one test (labels and finalizers come by the 100,000 in a 3 MiB body); the
// checks below only run to word what is wrong.
const validQualifiedName = new RegExp(`^(${dns1123SubdomainFmt}/)?${qualifiedNameFmt}$`);

/** validation.IsQualifiedName: [DNS subdomain "/"] name, name ≤ 63 chars. */
export function qualifiedNameErrors(value: string): string[] {
  if (value.length <= 63 && validQualifiedName.test(value)) return [];
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...dns1123SubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [`a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLen(name) > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!qualifiedNameRe.test(name)) errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

/** validation.IsValidLabelValue: empty, or a qualified-name-like string of ≤ 63 chars. */
export function labelValueErrors(value: string): string[] {
  if (value.length <= 63 && labelValueRe.test(value)) return [];
  const errs: string[] = [];
  if (byteLen(value) > 63) errs.push(maxLenError(63));
  if (!labelValueRe.test(value)) errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  return errs;
}



const dns1123LabelRe = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123LabelErrorMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/** IsDNS1123Label: namespace names. */
export function dns1123LabelErrors(v: string): string[] {
  const errs: string[] = [];
  if (byteLen(v) > 63) errs.push(maxLenError(63));
  if (!dns1123LabelRe.test(v)) errs.push(regexError(dns1123LabelErrorMsg, dns1123LabelFmt, 'my-name', '123-abc'));
  return errs;
}
