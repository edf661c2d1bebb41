// Storage-level errors (k8s.io/apiserver pkg/storage/errors.go): what went wrong at the key, not what a
// client is told. The registry turns them into Status errors (registry/generic/storageErrors.ts).

import { CONTINUE_LATEST, encodeContinue, TOO_OLD_CONTINUE } from './continueToken.js';

export type StorageErrorCode =
  | 'KeyNotFound'
  | 'KeyExists'
  /** The object kept changing under a guaranteed update, or a precondition's resourceVersion moved. */
  | 'Conflict'
  /** A precondition (uid, resourceVersion) does not hold for the stored object. */
  | 'InvalidObj'
  /** The resourceVersion asked for is older than the history kept (compacted). */
  | 'TooOld'
  /** The resourceVersion asked for has not been reached after waiting. */
  | 'TooLargeResourceVersion'
  /** The object would exceed the largest value stored. */
  | 'TooLarge'
  | 'Unavailable';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    readonly key = '',
    /** TooLargeResourceVersion: the client's digits and where the storage is; TooOld of a continue: a token for the rest at the latest state. */
    readonly detail: { requested?: string; current?: number; retryAfterSeconds?: number; continue?: string } = {},
  ) {
    super(message);
  }
}

export const storageErrors = {
  notFound: (key: string) => new StorageError('KeyNotFound', `key not found: ${key}`, key),
  exists: (key: string) => new StorageError('KeyExists', `key exists: ${key}`, key),
  conflict: (key: string) => new StorageError('Conflict', `the object has been modified: ${key}`, key),
  invalidObj: (key: string, message: string) => new StorageError('InvalidObj', message, key),
  /** Message as the watch cache words it; also what a 410 Expired carries. */
  tooOld: (requested: number, oldest: number) => new StorageError('TooOld', `too old resource version: ${requested} (${oldest})`),
  tooOldMessage: (message: string) => new StorageError('TooOld', message),
  /** A continue token whose revision is compacted: 410 with a token that goes on after the same key at the latest state. */
  tooOldContinue: (startAfter: string) => new StorageError('TooOld', TOO_OLD_CONTINUE, '', { continue: encodeContinue(CONTINUE_LATEST, startAfter) }),
  /** `retryAfterSeconds`: 1 from the watch cache, 0 from etcd itself (as upstream's store). */
  tooLargeResourceVersion: (requested: string, current: number, retryAfterSeconds = 1) =>
    new StorageError('TooLargeResourceVersion', `Too large resource version: ${requested}, current: ${current}`, '', { requested, current, retryAfterSeconds }),
  tooLarge: (message: string) => new StorageError('TooLarge', message),
  unavailable: (message: string) => new StorageError('Unavailable', message),
};

export const isStorageError = (e: unknown, code?: StorageErrorCode): e is StorageError =>
  e instanceof StorageError && (code === undefined || e.code === code);
