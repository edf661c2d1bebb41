// Name and label validation with k8s.io/apimachinery/pkg/util/validation's messages.

const dns1123Label = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123Subdomain = `${dns1123Label}(\\.${dns1123Label})*`;
const qualifiedNamePart = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const labelValue = '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?';

const subdomainRe = new RegExp(`^${dns1123Subdomain}$`);
const labelRe = new RegExp(`^${dns1123Label}$`);
const namePartRe = new RegExp(`^${qualifiedNamePart}$`);
const labelValueRe = new RegExp(`^${labelValue}$`);

const maxLen = (n: number) => `must be no more than ${n} characters`;

/** IsDNS1123Subdomain: errors, empty when valid. */
export function dns1123SubdomainErrors(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push(maxLen(253));
  if (!subdomainRe.test(v)) {
    errs.push(`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${dns1123Subdomain}')`);
  }
  return errs;
}

/** IsDNS1123Label (namespaces). */
export function dns1123LabelErrors(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push(maxLen(63));
  if (!labelRe.test(v)) {
    errs.push(`a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${dns1123Label}')`);
  }
  return errs;
}

/** IsQualifiedName: label keys, annotation keys, finalizers. */
export function qualifiedNameErrors(v: string): string[] {
  const parts = v.split('/');
  let name: string;
  const errs: string[] = [];
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    const [prefix] = parts;
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...dns1123SubdomainErrors(prefix).map((e) => `prefix part ${e}`));
  } else {
    return [`a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${qualifiedNamePart}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push(`name part ${maxLen(63)}`);
  if (name.length > 0 && !namePartRe.test(name)) {
    errs.push(`name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${qualifiedNamePart}')`);
  }
  return errs;
}

/** IsValidLabelValue. */
export function labelValueErrors(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push(maxLen(63));
  if (!labelValueRe.test(v)) {
    errs.push(`a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${labelValue}')`);
  }
  return errs;
}
