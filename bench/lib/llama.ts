// Realistic Llamas, created the way the REST create handler prepares them (prepareForCreate +
// validateObject defaults), but written straight into the store.
import { prepareForCreate } from '../../src/apimachinery/meta.js';
import type { ResourceDefinition } from '../../src/registry/resource.js';
import type { Storage } from '../../src/storage/interfaces.js';
import { objectKey } from '../../src/storage/objects.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { validateObject } from '../../src/registry/validation.js';
import { llamaColors } from '../../src/registry/farm/llama.js';

const foods = ['hay', 'carrots', 'alfalfa', 'apples', 'grass', 'oat pellets'];

/** The body a client would POST (what `kubectl create -f` sends for a typical manifest). */
export function llamaBody(namespace: string, name: string, i: number): KubeObject {
  return {
    apiVersion: 'farm.example.com/v1alpha',
    kind: 'Llama',
    metadata: {
      name,
      namespace,
      labels: { 'app.kubernetes.io/name': 'llama', herd: `herd-${i % 17}` },
      annotations: { 'farm.example.com/notes': `llama number ${i}` },
    },
    spec: {
      weight: 100 + (i % 90),
      height: 1.5 + (i % 40) / 100,
      color: llamaColors[i % llamaColors.length],
      favoriteFood: foods[i % foods.length],
    },
  };
}

/** The object Handlers.create would hand to the provider (JSON-parsed body, server-set meta, defaults). */
export function preparedLlama(def: ResourceDefinition, namespace: string, name: string, i: number, now = new Date()): KubeObject {
  const parsed = JSON.parse(JSON.stringify(llamaBody(namespace, name, i))) as KubeObject; // as the request parser makes it
  const result = validateObject(def, prepareForCreate(parsed, now));
  if (!result.value) throw new Error(`invalid bench llama: ${result.errors.map(String).join('; ')}`);
  return result.value;
}

/** Creates `count` llamas named `${prefix}-00000…` in `namespace` directly in the storage. */
export async function seedLlamas(def: ResourceDefinition, storage: Storage, namespace: string, count: number, prefix = 'llama', now = new Date()): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String(i).padStart(6, '0')}`;
    await storage.create(objectKey(namespace, name), preparedLlama(def, namespace, name, i, now));
  }
}
