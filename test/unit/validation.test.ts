import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import type { ResourceDefinition } from '../../src/registry/resource.js';
import { kindSchema } from '../../src/apimachinery/schema/kind.js';
import { errors } from '../../src/apimachinery/status.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { validateObject } from '../../src/registry/validation.js';
import { llamaShape } from '../helpers/providers.js';

const unused = async (): Promise<never> => { throw new Error('unused'); };
const llama = llamaShape();

const base = { apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: 'dolly', namespace: 'default' } };
const llamaWith = (spec: unknown, extra: Record<string, unknown> = {}) => ({ ...base, spec, ...extra });
const messages = (r: { errors: { toString(): string }[] }) => r.errors.map(String);

describe('validateObject: valid objects', () => {
  it('applies defaults and returns the parsed object', () => {
    const r = validateObject(llama, llamaWith({ weight: 31.4, height: 0.5 }));
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.unknownFields, []);
    assert.deepEqual(r.value?.spec, { weight: 31.4, height: 0.5, color: 'white', shorn: false });
    assert.deepEqual(r.value?.metadata, base.metadata);
  });

  it('keeps the full ObjectMeta and prunes nulls of non-nullable fields (creationTimestamp: null)', () => {
    const metadata = {
      name: 'dolly', namespace: 'default', labels: { app: 'farm' }, annotations: { a: 'b' }, finalizers: ['x/y'],
      uid: 'u', resourceVersion: '5', generation: 2, creationTimestamp: null,
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'u2', controller: true }],
      managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'farm.example.com/v1alpha', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:color': {} } } }],
    };
    const r = validateObject(llama, { ...base, metadata, spec: { weight: 1, height: 1, color: 'brown' } });
    assert.deepEqual(messages(r), []);
    assert.deepEqual(r.unknownFields, []);
    const { creationTimestamp: _ct, ...rest } = metadata;
    assert.deepEqual(r.value?.metadata, rest);
  });

  it('does not mutate its input', () => {
    const input = llamaWith({ weight: 1, height: 1, foo: 1 }, { metadata: { name: 'x', creationTimestamp: null } });
    const copy = structuredClone(input);
    validateObject(llama, input);
    assert.deepEqual(input, copy);
  });
});

describe('validateObject: error mapping like apiextensions-apiserver', () => {
  it('missing required fields are Required value', () => {
    const r = validateObject(llama, llamaWith({ weight: 3 }));
    assert.deepEqual(messages(r), ['spec.height: Required value']);
    assert.equal(r.errors[0].type, 'FieldValueRequired');
    assert.equal(r.errors[0].field, 'spec.height');
    assert.equal(r.value, undefined);
    assert.deepEqual(messages(validateObject(llama, base)), ['spec: Required value']);
  });

  it('a wrong type is reported as upstream words it', () => {
    const r = validateObject(llama, llamaWith({ weight: 'string', height: 1 }));
    assert.deepEqual(messages(r), ['spec.weight: Invalid value: "string": spec.weight in body must be of type number: "string"']);
    assert.equal(r.errors[0].type, 'FieldValueTypeInvalid');
    assert.deepEqual(messages(validateObject(llama, llamaWith({ weight: 1, height: 1, shorn: 'yes' }))),
      ['spec.shorn: Invalid value: "string": spec.shorn in body must be of type boolean: "string"']);
    assert.deepEqual(messages(validateObject(llama, llamaWith([1]))),
      ['spec: Invalid value: "array": spec in body must be of type object: "array"']);
    assert.deepEqual(messages(validateObject(llama, llamaWith({ weight: 1, height: 1 }, { metadata: { name: 'x', labels: { a: 1 } } }))),
      ['metadata.labels.a: Invalid value: "number": metadata.labels.a in body must be of type string: "number"']);
  });

  it('an enum violation is Unsupported value with the supported values', () => {
    const r = validateObject(llama, llamaWith({ weight: 1, height: 1, color: 'pink' }));
    assert.deepEqual(messages(r), ['spec.color: Unsupported value: "pink": supported values: "white", "brown", "black", "grey", "spotted"']);
    assert.equal(r.errors[0].type, 'FieldValueNotSupported');
  });

  it('bounds are Invalid value / Too long', () => {
    assert.deepEqual(messages(validateObject(llama, llamaWith({ weight: 0, height: -1 }))), [
      'spec.weight: Invalid value: 0: spec.weight in body should be greater than 0',
      'spec.height: Invalid value: -1: spec.height in body should be greater than 0',
    ]);
    assert.deepEqual(messages(validateObject(llama, llamaWith({ weight: 1, height: 1, favoriteFood: 'h'.repeat(64) }))),
      ['spec.favoriteFood: Too long: may not be more than 63 bytes']);
  });

  it('errors become a 422 Invalid Status through errors.invalid', () => {
    const r = validateObject(llama, llamaWith({ weight: 1 }));
    const status = errors.invalid({ group: 'farm.example.com', kind: 'Llama' }, 'dolly', r.errors).toStatus();
    assert.equal(status.code, 422);
    assert.equal(status.message, 'Llama.farm.example.com "dolly" is invalid: spec.height: Required value');
    assert.deepEqual(status.details?.causes, [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.height' }]);
  });
});

describe('validateObject: unknown fields', () => {
  it('lists unknown fields as dotted paths without failing, and drops them from the value', () => {
    const r = validateObject(llama, llamaWith({ weight: 1, height: 1, foo: 1, nested: { a: 1 } }, { metadata: { name: 'x', foo: 'bar' }, extra: true }));
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.unknownFields.sort(), ['extra', 'metadata.foo', 'spec.foo', 'spec.nested']);
    const v = r.value as KubeObject;
    assert.equal((v.spec as Record<string, unknown>).foo, undefined);
    assert.equal(v.metadata.foo, undefined);
    assert.equal(v.extra, undefined);
  });

  it('are listed alongside errors too', () => {
    const r = validateObject(llama, llamaWith({ weight: 1, foo: 1 }));
    assert.deepEqual(messages(r), ['spec.height: Required value']);
    assert.deepEqual(r.unknownFields, ['spec.foo']);
  });

  it('descends arrays and stops at x-kubernetes-preserve-unknown-fields objects', () => {
    const def: ResourceDefinition = {
      ...llama, kind: 'Silo', plural: 'silos', singular: 'silo',
      schema: kindSchema({
        group: 'farm.example.com', version: 'v1alpha', kind: 'Silo', description: 'Silo.',
        spec: z.object({
          bins: z.array(z.object({ grain: z.string().describe('Grain.') })).optional().describe('Bins.'),
          extra: z.looseObject({}).optional().describe('Anything goes.'),
        }).describe('Silo spec.'),
      }),
    };
    const r = validateObject(def, {
      ...base, kind: 'Silo',
      spec: { bins: [{ grain: 'wheat' }, { grain: 'oat', colour: 'gold' }], extra: { any: { thing: 1 } } },
    });
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.unknownFields, ['spec.bins[1].colour']);
    assert.deepEqual((r.value?.spec as Record<string, unknown>).extra, { any: { thing: 1 } });
  });
});
