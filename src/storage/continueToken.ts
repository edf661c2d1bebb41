// Continue tokens as k8s.io/apiserver's storage encodes them: base64url JSON of the list's
// resourceVersion and the key to start after, so every page of a list is read at one revision.
import { errors } from '../apimachinery/status.js';

interface ContinueToken { v: string; rv: number; start: string }

/** A token's revision that means "the latest state" (what a 410 for a compacted continue hands out; 0 stays malformed). */
export const CONTINUE_LATEST = -1;

/** Where a continued list resumes: the first page's resourceVersion, after its last key. */
export interface ContinueFrom { rv: number; startAfter: string }

export function encodeContinue(rv: number, lastKey: string): string {
  const token: ContinueToken = { v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` };
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

/** A token's resourceVersion and start key; 400 for anything malformed or outside `prefix`. */
export function decodeContinue(s: string, prefix: string): ContinueFrom {
  let token: ContinueToken;
  try {
    token = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    throw errors.badRequest('continue key is not valid: illegal base64 data or invalid JSON');
  }
  if (token?.v !== 'meta.k8s.io/v1') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  // Go unmarshals the revision into an int64: a fraction, an exponent past it or a string is malformed;
  // past 2^53 a JS number is no longer the client's revision either. Below 0 means the latest state.
  if (!Number.isSafeInteger(token.rv) || token.rv === 0 || token.rv < CONTINUE_LATEST || typeof token.start !== 'string') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  const startAfter = token.start.endsWith('\u0000') ? token.start.slice(0, -1) : token.start;
  if (!startAfter.startsWith(prefix) || startAfter.includes('..')) throw errors.badRequest('continue key is not valid: key is outside the requested range');
  return { rv: token.rv, startAfter };
}

/** A list's continue token with the check upstream makes first (no resourceVersion beside a continue). */
export function parseContinue(opts: { continue: string; resourceVersion: string; prefix: string }): ContinueFrom {
  if (opts.resourceVersion !== '' && opts.resourceVersion !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
  return decodeContinue(opts.continue, opts.prefix);
}

/** etcd3 errors.go continueExpired: an expired continue where no token for the rest can be handed out. */
export const CONTINUE_EXPIRED = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

/** etcd3 errors.go inconsistentContinue: an expired continue whose Status carries a token for the rest at the latest state. */
export const TOO_OLD_CONTINUE = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
