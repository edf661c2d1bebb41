// Provider stubs for tests that only need a definition's shape (verbs come from the methods present).
import type { Provider } from '../../src/registry/resource.js';

const unused = async (): Promise<never> => { throw new Error('unused'); };
export const writableProvider = { cache: {} as never, create: unused, update: unused, delete: unused } as unknown as Provider;
export const readOnlyProvider = { cache: {} as never } as unknown as Provider;
