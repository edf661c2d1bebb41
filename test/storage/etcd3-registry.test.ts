// The generic registry Store's write semantics over the etcd3 backend (a real etcd).
import { after } from 'node:test';
import { etcd3Backends } from '../helpers/etcd.js';
import { registryContract } from './registryContract.js';
import { deleteCollectionContract } from './registryCollections.js';

const backends = etcd3Backends();
after(() => backends.stop());

registryContract('Etcd3Storage', backends.make);
deleteCollectionContract('Etcd3Storage', backends.make);
