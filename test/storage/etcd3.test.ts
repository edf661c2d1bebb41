// The storage contract against the etcd3 backend (Etcd3Storage: transactions on a real etcd, reads from its watch cache).
import { after } from 'node:test';
import { etcd3Backends } from '../helpers/etcd.js';
import { storageContract } from './contract.js';

const backends = etcd3Backends();
after(() => backends.stop());

storageContract('Etcd3Storage', backends.make);
