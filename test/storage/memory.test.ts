// The storage contract against the in-memory backend (MemoryStorage over its ObjectCache).
import { storageContract } from './contract.js';
import { makeMemoryStorage } from './memoryBackend.js';

storageContract('MemoryStorage', makeMemoryStorage);
