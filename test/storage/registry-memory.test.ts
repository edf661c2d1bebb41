// The generic registry Store's write semantics over the in-memory backend.
import { makeMemoryStorage } from './memoryBackend.js';
import { registryContract } from './registryContract.js';
import { deleteCollectionContract } from './registryCollections.js';

registryContract('MemoryStorage', makeMemoryStorage);
deleteCollectionContract('MemoryStorage', makeMemoryStorage);
