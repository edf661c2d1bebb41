// Continue tokens as k8s.io/apiserver's storage encodes them: base64url JSON of the list's
// resourceVersion and the key to start after, so every page of a list is read at one revision.
import { errors } from '../apimachinery/status.js';

interface ContinueToken { v: string; rv: number | string; start: string }

/** A token's revision that means "the latest state" (a 410 for a compacted continue hands it out; any negative one reads so; 0 is malformed). */
export const CONTINUE_LATEST = -1;

/** Where a continued list resumes: the first page's resourceVersion, after its last key. */
export interface ContinueFrom { rv: number; startAfter: string }

/** `rv`: a revision, or a resource's own opaque resourceVersion text (FarmPods' positions). */
export function encodeContinue(rv: number | string, lastKey: string): string {
  const token: ContinueToken = { v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` };
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

/** storage.DecodeContinue's errors as ValidateListOptions words them: 400 "invalid continue token: ...". */
export const invalidContinue = {
  generic: (detail: string) => errors.badRequest(`invalid continue token: continue key is not valid: ${detail}`),
  startRV: () => errors.badRequest('invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)'),
  emptyStart: () => errors.badRequest('invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)'),
  version: (v: unknown) => errors.badRequest(`invalid continue token: continue key is not valid: server does not recognize this encoded version ${typeof v === 'string' ? v : ''}`),
};

/** The JSON of a token, in the order DecodeContinue checks it: base64url, JSON object, encoding version. */
export function continueJson(s: string): { rv?: unknown; start?: unknown } {
  let token: unknown;
  try {
    token = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch (e) {
    throw invalidContinue.generic(e instanceof Error ? e.message : 'illegal base64 data');
  }
  if (typeof token !== 'object' || token === null || Array.isArray(token)) throw invalidContinue.generic('json: cannot unmarshal into a continue token');
  const t = token as { v?: unknown; rv?: unknown; start?: unknown };
  if (t.v !== 'meta.k8s.io/v1') throw invalidContinue.version(t.v);
  return t;
}

/** The key a token starts after; 400 when empty or outside `prefix` (upstream: not a clean path under the list's key). */
export function continueStart(start: unknown, prefix: string): string {
  if (typeof start !== 'string') throw invalidContinue.generic('json: cannot unmarshal the start key into a string');
  if (start === '') throw invalidContinue.emptyStart();
  const startAfter = start.endsWith('\u0000') ? start.slice(0, -1) : start;
  if (!startAfter.startsWith(prefix) || startAfter.includes('..')) throw invalidContinue.generic(start);
  return startAfter;
}

/** A token's resourceVersion (any negative one: the latest state) and start key; 400 for anything malformed or outside `prefix`. */
export function decodeContinue(s: string, prefix: string): ContinueFrom {
  const token = continueJson(s);
  const rv = token.rv;
  if (rv === 0) throw invalidContinue.startRV();
  // Go unmarshals the revision into an int64: a fraction, an exponent past it or a string is malformed;
  // past 2^53 a JS number is no longer the client's revision either.
  if (typeof rv !== 'number' || !Number.isSafeInteger(rv)) throw invalidContinue.generic('json: cannot unmarshal the resourceVersion into an int64');
  return { rv: rv < 0 ? CONTINUE_LATEST : rv, startAfter: continueStart(token.start, prefix) };
}

/** The check ValidateListOptions makes after decoding a continue token: no resourceVersion beside it ("0" is none). */
export function checkNoResourceVersion(resourceVersion: string): void {
  if (resourceVersion !== '' && resourceVersion !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
}

/** A list's continue token, then the resourceVersion beside it. */
export function parseContinue(opts: { continue: string; resourceVersion: string; prefix: string }): ContinueFrom {
  const c = decodeContinue(opts.continue, opts.prefix);
  checkNoResourceVersion(opts.resourceVersion);
  return c;
}

/** etcd3 errors.go continueExpired: an expired continue where no token for the rest can be handed out. */
export const CONTINUE_EXPIRED = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

/** etcd3 errors.go inconsistentContinue: an expired continue whose Status carries a token for the rest at the latest state. */
export const TOO_OLD_CONTINUE = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
