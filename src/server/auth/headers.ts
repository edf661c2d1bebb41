// Identity headers carry UTF-8 (Go reads header bytes as they are); Node hands them over decoded as
// Latin-1, one character per byte. Re-decoding gives the name the client meant, not mojibake.

export function headerText(value: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u007f]*$/.test(value) ? value : Buffer.from(value, 'latin1').toString('utf8');
}

/** Every value of a header (Node's headersDistinct), decoded as UTF-8. */
export function headerValues(headers: NodeJS.Dict<string[]>, name: string): string[] {
  return (headers[name] ?? []).map(headerText);
}
