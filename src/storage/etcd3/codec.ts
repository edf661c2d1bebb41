// How the etcd3 backend lays objects out in etcd, as kube's etcd3 store does: key "<prefix>/<ns>/<name>",
// value the object's JSON without metadata.resourceVersion (the revision is the resourceVersion:
// mod_revision for an object, the header revision for a list or a delete).
import type { KubeObject } from '../../apimachinery/types.js';
import { storageErrors, StorageError } from '../errors.js';
import type { Entry } from '../interfaces.js';
import { stamped } from '../objects.js';
import type { IKeyValue } from './client.js';

export class EtcdKeys {
  /** `prefix` without a trailing slash, e.g. "/registry/farm.example.com/llamas". */
  constructor(readonly prefix: string) {
    if (prefix.endsWith('/')) throw new Error(`etcd prefix must not end with "/": ${prefix}`);
  }

  /** The etcd key of a storage key ("ns/name"). */
  key(storageKey: string): Buffer { return Buffer.from(`${this.prefix}/${storageKey}`); }

  /** The storage key of an etcd key under the prefix. */
  storageKey(etcdKey: Buffer): string { return etcdKey.toString('utf8').slice(this.prefix.length + 1); }

  /** [key, range_end) of everything under the prefix: "<prefix>/" up to "<prefix>0" ('0' follows '/'). */
  range(): { key: Buffer; range_end: Buffer } {
    return this.rangeOf('');
  }

  /** [key, range_end) of the storage keys starting with `storagePrefix` ("ns/", or "" for all). */
  rangeOf(storagePrefix: string): { key: Buffer; range_end: Buffer } {
    const key = this.key(storagePrefix);
    return { key, range_end: prefixEnd(key) };
  }
}

/** The first key after `key` (the next page of a Range starts there). */
export const keyAfter = (key: Buffer): Buffer => Buffer.concat([key, Buffer.from([0])]);

/** clientv3.GetPrefixRangeEnd: the first key after every key starting with `prefix`. */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // all 0xff: to the end of the keyspace
}

/** The stored value: the object without its resourceVersion (PrepareObjectForStorage). */
export function encodeValue(obj: KubeObject): string {
  const { resourceVersion: _omitted, ...metadata } = obj.metadata;
  return JSON.stringify({ ...obj, metadata });
}

/**
 * How much longer the object as served at `rv` is than its stored value: exactly the field
 * `"resourceVersion":"<rv>",` (metadata always holds a name, so the comma is there).
 */
export const resourceVersionFieldLength = (rv: number): number => `"resourceVersion":"${rv}",`.length;

/** The entry of a key-value, stamped with `rv` (default: the value's mod_revision). */
export function decodeEntry(keys: EtcdKeys, kv: IKeyValue, rv = kv.mod_revision): Entry {
  return stamped(keys.storageKey(kv.key), JSON.parse(kv.value.toString('utf8')) as KubeObject, rv);
}

/** etcd's and gRPC's failures as the storage contract's errors. */
export function storageErrorOf(e: unknown): unknown {
  if (e instanceof StorageError || !(e instanceof Error)) return e;
  const m = e.message;
  if (/request is too large|message larger than max/i.test(m)) return storageErrors.tooLarge(`Request entity too large: ${m}`);
  if (/required revision has been compacted/.test(m)) return storageErrors.tooOldMessage('The resourceVersion for the provided list is too old.');
  // Everything else a client cannot fix: etcd down, a deadline, an open circuit breaker, leader loss.
  return storageErrors.unavailable(`etcd: ${m}`);
}

/** Runs one etcd call; its failure as the storage contract's error. */
export async function etcdCall<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw storageErrorOf(e);
  }
}
