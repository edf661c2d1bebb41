// storage errors → Status errors, as the generic registry's storage.InterpretCreateError & co. word them.
import { errors, type GroupResource } from '../../apimachinery/status.js';
import { StorageError } from '../../storage/errors.js';

export const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

/** Rethrows `e` as the Status error a client gets for it (non-storage errors pass through). */
export function interpretStorageError(e: unknown, gr: GroupResource, name: string): never {
  if (!(e instanceof StorageError)) throw e;
  switch (e.code) {
    case 'KeyNotFound': throw errors.notFound(gr, name);
    case 'KeyExists': throw errors.alreadyExists(gr, name);
    case 'Conflict': throw errors.conflict(gr, name, MODIFIED);
    // A precondition that failed at the storage (the object changed after the registry checked it).
    case 'InvalidObj': throw errors.conflict(gr, name, e.message);
    case 'TooOld': throw errors.expired(e.message, e.detail.continue);
    case 'TooLargeResourceVersion': throw errors.tooLargeResourceVersion(e.detail.requested ?? '', e.detail.current ?? 0, e.detail.retryAfterSeconds);
    case 'TooLarge': throw errors.tooLarge(e.message);
    case 'Unavailable': throw errors.serviceUnavailable(e.message);
  }
}

/** Runs a storage call, translating what it throws. */
export async function interpreted<T>(gr: GroupResource, name: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    return interpretStorageError(e, gr, name);
  }
}
