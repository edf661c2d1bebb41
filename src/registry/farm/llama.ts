// The Llama resource: schema (with descriptions and defaults), printer columns, and its definition.
import { z } from 'zod';
import type { Storage } from '../../storage/interfaces.js';
import { Store } from '../generic/store.js';
import { subresourceStores } from '../generic/statusStore.js';
import type { Strategy } from '../generic/strategy.js';
import type { ResourceDefinition, ResourceDescriptor } from '../resource.js';
import type { CollectionDeleter, Creater, GracefulDeleter, Readable, Updater } from '../rest.js';
import { conditionList, docs, int64 } from '../../apimachinery/schema/metav1.js';
import { validateConditions, type ConditionInput } from '../../apimachinery/conditions.js';
import { kindSchema } from '../../apimachinery/schema/kind.js';
import { ageCell } from '../tableCells.js';
import type { KubeObject } from '../../apimachinery/types.js';

export const LLAMA_GROUP = 'farm.example.com';
export const LLAMA_VERSION = 'v1alpha';

export const llamaColors = ['white', 'brown', 'black', 'grey', 'spotted'] as const;

const colorDescription = `Colour of the llama's fleece: one of ${llamaColors.map((c) => `"${c}"`).join(', ')}. Defaults to "white".`;
const foodDescription = 'The food the llama likes best, e.g. "hay" or "carrots". Free text, at most 63 characters.';

export const LlamaSpec = z.object({
  weight: z.number().gt(0).describe('Weight of the llama in kilograms. Required; must be greater than 0.'),
  height: z.number().gt(0).describe('Height of the llama at the withers, in metres. Required; must be greater than 0.'),
  color: z.enum(llamaColors).default('white').describe(colorDescription),
  favoriteFood: z.string().max(63).optional().describe(foodDescription),
  shorn: z.boolean().default(false).describe('Whether the llama has been shorn this season. Defaults to false.'),
}).describe('LlamaSpec is the desired state of a Llama: its measurements and looks.');

export const LlamaStatus = z.object({
  conditions: conditionList(
    'The latest observations of the Llama\'s state, one per condition type (e.g. "Ready"). Known types: "Ready" (the llama is healthy and at home).').optional(),
  observedGeneration: int64().optional().describe(
    'The metadata.generation of the Llama that this status was last computed for.'),
}).describe('LlamaStatus is the most recently observed state of a Llama. Populated by the system. Read-only.');

export const LlamaSchema = kindSchema({
  group: LLAMA_GROUP,
  version: LLAMA_VERSION,
  kind: 'Llama',
  description: 'Llama is a llama living on the farm: a domesticated South American camelid, kept for its wool.',
  spec: LlamaSpec,
  status: LlamaStatus,
});

function spec(obj: KubeObject): Record<string, unknown> {
  const s = obj.spec;
  return s && typeof s === 'object' ? (s as Record<string, unknown>) : {};
}

/** status.conditions of a schema-valid Llama. */
function conditionsOf(obj: KubeObject): ConditionInput[] | undefined {
  const status = obj.status as { conditions?: ConditionInput[] } | undefined;
  return status?.conditions;
}

function numberOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function stringOrNull(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Llamas are stored by us: every verb, Kubernetes write semantics from the generic store. */
export function llamaDefinition(storage: Storage, strategy: Strategy): ResourceDefinition {
  const def = llamaDescriptor();
  // Every verb (Go's `var _ rest.Creater = …`): dropping one from the store fails to compile here.
  const rest = new Store(def, storage, strategy) satisfies Readable & Creater & Updater & GracefulDeleter & CollectionDeleter;
  return { ...def, rest, subresourceRest: subresourceStores(def, storage, strategy) };
}

export function llamaDescriptor(): ResourceDescriptor {
  return {
    group: LLAMA_GROUP,
    version: LLAMA_VERSION,
    kind: 'Llama',
    plural: 'llamas',
    singular: 'llama',
    shortNames: ['ll'],
    categories: ['farm'],
    namespaced: true,
    description: 'Llama is a llama living on the farm: a domesticated South American camelid, kept for its wool.',
    schema: LlamaSchema,
    columns: [
      { name: 'Name', type: 'string', format: 'name', description: docs.name, priority: 0, cell: (o) => o.metadata.name ?? '' },
      { name: 'Color', type: 'string', description: colorDescription, priority: 0, cell: (o) => stringOrNull(spec(o).color) },
      { name: 'Weight', type: 'number', description: 'Weight of the llama in kilograms.', priority: 0, cell: (o) => numberOrNull(spec(o).weight) },
      { name: 'Height', type: 'number', description: 'Height of the llama at the withers, in metres.', priority: 1, cell: (o) => numberOrNull(spec(o).height) },
      { name: 'Food', type: 'string', description: foodDescription, priority: 1, cell: (o) => stringOrNull(spec(o).favoriteFood) },
      { name: 'Age', type: 'date', description: docs.creationTimestamp, priority: 0, cell: ageCell },
    ],
    fieldSelectors: {
      'spec.color': (o) => stringOrNull(spec(o).color) ?? undefined,
    },
    subresources: { status: true },
    validate: (o) => validateConditions(conditionsOf(o), 'status.conditions'),
  };
}
