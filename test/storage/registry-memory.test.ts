// The generic registry Store's write semantics over the in-memory backend.
import { makeMemoryStorage } from './memoryBackend.js';
import { registryContract } from './registryContract.js';

registryContract('MemoryStorage', makeMemoryStorage);
