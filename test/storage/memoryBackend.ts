// The in-memory backend as the contract suites' factory. Its history is a count of changes, so
// "compaction" is writing past it: afterwards every resourceVersion before the call is too old.
import { MemoryStorage } from '../../src/storage/memory/memoryStorage.js';
import { COMPACTION_PREFIX, type Backend, type BackendOptions } from './harness.js';

const DEFAULT_HISTORY = 1000;

export async function makeMemoryStorage(opts: BackendOptions = {}): Promise<Backend> {
  const historyLimit = opts.historyLimit ?? DEFAULT_HISTORY;
  const storage = new MemoryStorage({ historyLimit });
  const filler = `${COMPACTION_PREFIX}filler`;
  return {
    storage,
    view: storage.view,
    async compact() {
      // The cache keeps up to 2 x historyLimit changes; 2 x historyLimit + 1 more pushes every older one out.
      for (let i = 0; i <= 2 * historyLimit; i++) {
        await storage.guaranteedUpdate(filler, async (cur) => ({
          object: { apiVersion: 'v1', kind: 'Filler', metadata: { name: 'filler' }, data: { n: i, had: cur !== undefined } },
          result: 0,
        }));
      }
    },
    async close() {},
  };
}
