// resourceVersion strings as the storage layer's APIObjectVersioner parses them.
import { errors } from './status.js';

/** "" → undefined; otherwise a non-negative integer or 400, as the storage layer's ParseResourceVersion answers. */
export function parseRV(rv: string): number | undefined {
  if (rv === '') return undefined;
  // strconv.ParseUint(rv, 10, 64): digits only, and no larger than a uint64.
  if (!/^\d+$/.test(rv) || BigInt(rv) > 18446744073709551615n) throw errors.badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  return Number(rv);
}
