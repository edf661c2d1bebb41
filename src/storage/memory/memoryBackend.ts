// The embedded default: each resource in this process's memory, gone when it exits.
import type { ResourceStorage, StorageBackend } from '../backend.js';
import { MemoryStorage } from './memoryStorage.js';

export function memoryBackend(): StorageBackend {
  return {
    name: 'memory',
    forResource: (_resource, historyLimit): ResourceStorage => new MemoryStorage({ historyLimit }),
    start() {},
    async stop() {},
    livez: [],
    readyz: [],
  };
}
