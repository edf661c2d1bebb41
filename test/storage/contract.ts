// The storage contract suite (modelled on k8s.io/apiserver pkg/storage/testing/store_tests.go and
// watcher_tests.go): what every Storage backend must do, asserted through the interfaces only, with
// storage-level errors checked by their code. A backend's test file calls storageContract() with its factory.
import { describe } from 'node:test';
import { listCases } from './contractLists.js';
import { modelCases } from './contractModel.js';
import { watchCases } from './contractWatch.js';
import { writeCases } from './contractWrites.js';
import type { MakeStorage } from './harness.js';

export type { Backend, BackendOptions, MakeStorage } from './harness.js';

export function storageContract(name: string, makeStorage: MakeStorage): void {
  describe(`storage contract: ${name}`, () => {
    writeCases(makeStorage);
    listCases(makeStorage);
    watchCases(makeStorage);
    modelCases(makeStorage);
  });
}
