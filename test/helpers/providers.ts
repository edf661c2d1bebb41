// Storage stubs for tests that only need a definition's shape (verbs come from the methods present).
import type { RestStorage } from '../../src/registry/rest.js';
import { llamaDescriptor } from '../../src/registry/farm/llama.js';
import type { ResourceDefinition } from '../../src/registry/resource.js';

const unused = async (): Promise<never> => { throw new Error('unused'); };
const reads = { unavailable: () => undefined, get: unused, list: unused, watch: unused };
export const writableProvider: RestStorage = { ...reads, create: unused, update: unused, delete: unused, deleteCollection: unused };
export const readOnlyProvider: RestStorage = reads;

/** The Llama definition with storage that is never called. */
export const llamaShape = (): ResourceDefinition => ({ ...llamaDescriptor(), rest: writableProvider });
