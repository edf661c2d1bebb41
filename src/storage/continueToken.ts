// Continue tokens as k8s.io/apiserver's storage encodes them: base64url JSON of the list's
// resourceVersion and the key to start after, so every page of a list is read at one revision.
import { errors } from '../apimachinery/status.js';

interface ContinueToken { v: string; rv: number; start: string }

export function encodeContinue(rv: number, lastKey: string): string {
  const token: ContinueToken = { v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` };
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

/** A token's resourceVersion and start key; 400 for anything malformed or outside `prefix`. */
export function decodeContinue(s: string, prefix: string): { rv: number; startAfter: string } {
  let token: ContinueToken;
  try {
    token = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    throw errors.badRequest('continue key is not valid: illegal base64 data or invalid JSON');
  }
  if (token?.v !== 'meta.k8s.io/v1') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (typeof token.rv !== 'number' || token.rv <= 0 || typeof token.start !== 'string') throw errors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  const startAfter = token.start.endsWith('\u0000') ? token.start.slice(0, -1) : token.start;
  if (!startAfter.startsWith(prefix) || startAfter.includes('..')) throw errors.badRequest('continue key is not valid: key is outside the requested range');
  return { rv: token.rv, startAfter };
}

export const TOO_OLD_CONTINUE = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
