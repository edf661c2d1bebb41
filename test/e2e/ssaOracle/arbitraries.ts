// fast-check generators of oracle sequences. Values stay valid for Llama (weight and height > 0,
// color from the enum, favoriteFood ≤ 63 chars) so differences are about write semantics, not about
// validation wording; invalid requests are generated on purpose and rarely.
import fc from 'fast-check';
import type { Sequence } from './runner.js';
import type { Change, Config, JsonOp, ManagedFieldsPayload, OwnerRef, SpecFields, Step, Sub, Writer } from './steps.js';

export const LONG_MANAGER = 'm'.repeat(129);
export const APPLIERS = ['alpha', 'beta', 'kubectl'] as const;
const UPDATERS = ['alpha', 'beta', 'kubectl', 'kubectl-edit', 'controller', 'flux'] as const;
const USER_AGENTS = [
  'kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9', 'flux/1.0', 'kube-rs/0.99.0', 'curl/8.5.0', 'NoSlashAgent',
] as const;
const COLORS = ['white', 'brown', 'black', 'grey', 'spotted'] as const;
const FOODS = ['hay', 'carrots', 'grass'] as const;
const LABEL_KEYS = ['app', 'tier', 'example.com/team'] as const;
const LABEL_VALUES = ['web', 'db', 'x'] as const;
const ANNOTATION_KEYS = ['note', 'example.com/owner'] as const;
const ANNOTATION_VALUES = ['hello', 'a b', ''] as const;
const FINALIZERS = ['example.com/guard', 'example.com/audit'] as const;
export const OWNERS: readonly OwnerRef[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm-a', uid: '6b1a3f2e-0000-4000-8000-00000000000a' },
  { apiVersion: 'apps/v1', kind: 'Deployment', name: 'dep-b', uid: '6b1a3f2e-0000-4000-8000-00000000000b', controller: true, blockOwnerDeletion: true },
  { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm-a-renamed', uid: '6b1a3f2e-0000-4000-8000-00000000000a' },
];

const weight = fc.constantFrom(1, 42, 120, 250.5);
const height = fc.constantFrom(0.5, 1.7, 2);
const color = fc.constantFrom(...COLORS);
const food = fc.constantFrom(...FOODS);

/** A subset of spec fields (what an applier manages); `full` always has the required ones. */
function specFields(full: boolean): fc.Arbitrary<SpecFields> {
  const requiredKeys: Array<'weight' | 'height'> = full ? ['weight', 'height'] : [];
  return fc.record({ weight, height, color, favoriteFood: food, shorn: fc.boolean() }, { requiredKeys });
}

/** Mostly non-empty; an empty map or list (kube drops it from ObjectMeta) one time in ten. */
const sometimesEmpty = <T>(a: fc.Arbitrary<T>, empty: T) => fc.oneof({ weight: 9, arbitrary: a }, { weight: 1, arbitrary: fc.constant(empty) });
const labels = sometimesEmpty(fc.dictionary(fc.constantFrom(...LABEL_KEYS), fc.constantFrom(...LABEL_VALUES), { minKeys: 1, maxKeys: 3 }), {});
const annotations = sometimesEmpty(fc.dictionary(fc.constantFrom(...ANNOTATION_KEYS), fc.constantFrom(...ANNOTATION_VALUES), { minKeys: 1, maxKeys: 2 }), {});
const finalizers = sometimesEmpty(fc.subarray([...FINALIZERS], { minLength: 1 }), []);
// Two references with the same uid are one keyed item twice (upstream: a duplicate-key error); kept rare.
const ownerReferences = sometimesEmpty(fc.oneof(
  { weight: 15, arbitrary: fc.subarray(OWNERS.slice(0, 2), { minLength: 1 }) },
  { weight: 1, arbitrary: fc.subarray([...OWNERS], { minLength: 3 }) },
), []);
const observedGeneration = fc.integer({ min: 0, max: 5 });

function config(fullSpec: fc.Arbitrary<boolean>): fc.Arbitrary<Config> {
  return fc.tuple(fullSpec, fc.boolean()).chain(([full, withSpec]) => fc.record({
    spec: withSpec || full ? specFields(full) : fc.constant({}),
    labels, annotations, finalizers, ownerReferences,
    status: fc.record({ observedGeneration }),
  }, { requiredKeys: full ? ['spec'] : [] }));
}

const fieldManager = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fc.constantFrom(...UPDATERS) },
  // >10 Update managers make upstream merge the oldest into "ancient-changes"
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 11 }).map((i) => `updater-${i}`) },
  { weight: 1, arbitrary: fc.constant(LONG_MANAGER) },
);
const userAgent = fc.option(fc.constantFrom(...USER_AGENTS), { freq: 8, nil: undefined });

/** Drops keys whose value is undefined or false, so printed steps show only what is set. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== false)) as T;
}

const writer: fc.Arbitrary<Writer> = fc.record({
  fieldManager, userAgent,
  dryRun: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  force: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
}).map(compact);

const nullable = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: a }, { weight: 1, arbitrary: fc.constant(null) });
const managedFieldsPayload: fc.Arbitrary<ManagedFieldsPayload> = fc.constantFrom('reset', 'replace', 'badOperation', 'badFieldsType');

/** A change. The required spec fields are never deleted (that would only test validation messages). */
const change: fc.Arbitrary<Change> = fc.record({
  spec: fc.record({ weight, height, color: nullable(color), favoriteFood: nullable(food), shorn: nullable(fc.boolean()) }, { requiredKeys: [] }),
  labels: fc.dictionary(fc.constantFrom(...LABEL_KEYS), nullable(fc.constantFrom(...LABEL_VALUES)), { maxKeys: 2 }),
  annotations: fc.dictionary(fc.constantFrom(...ANNOTATION_KEYS), nullable(fc.constantFrom(...ANNOTATION_VALUES)), { maxKeys: 2 }),
  finalizers: nullable(finalizers),
  ownerReferences: nullable(fc.subarray(OWNERS.slice(0, 2))),
  status: fc.record({ observedGeneration: nullable(observedGeneration) }),
  managedFields: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: managedFieldsPayload }),
}, { requiredKeys: [] }).map((c) => (c.managedFields === undefined ? (({ managedFields: _m, ...rest }) => rest)(c) : c));

const statusChange: fc.Arbitrary<Change> = fc.record({
  status: fc.record({ observedGeneration: nullable(observedGeneration) }),
  labels: fc.dictionary(fc.constantFrom(...LABEL_KEYS), nullable(fc.constantFrom(...LABEL_VALUES)), { maxKeys: 1 }),
  spec: fc.record({ color }, { requiredKeys: [] }),
}, { requiredKeys: ['status'] });

const jsonOp: fc.Arbitrary<JsonOp> = fc.oneof(
  weight.map((v): JsonOp => ({ op: 'replace', path: '/spec/weight', value: v })),
  food.map((v): JsonOp => ({ op: 'add', path: '/spec/favoriteFood', value: v })),
  fc.constant<JsonOp>({ op: 'remove', path: '/spec/favoriteFood' }),
  color.map((v): JsonOp => ({ op: 'test', path: '/spec/color', value: v })),
  fc.constantFrom(...LABEL_VALUES).map((v): JsonOp => ({ op: 'add', path: '/metadata/labels/app', value: v })),
  fc.constantFrom(...FINALIZERS).map((v): JsonOp => ({ op: 'add', path: '/metadata/finalizers/-', value: v })),
  observedGeneration.map((v): JsonOp => ({ op: 'add', path: '/status', value: { observedGeneration: v } })),
);

const sub: fc.Arbitrary<Sub> = fc.oneof({ weight: 4, arbitrary: fc.constant('main' as const) }, { weight: 1, arbitrary: fc.constant('status' as const) });

const applyManager = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom<string | undefined>(...APPLIERS) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(LONG_MANAGER) },
);
const rarely = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 15, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });

/** An apply; `fullSpecPercent` of main-resource applies carry the required spec fields (a first apply creates). */
const applyStep = (fullSpecPercent: number): fc.Arbitrary<Step> => fc.record({
  sub, manager: applyManager,
  force: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  dryRun: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
  yaml: fc.boolean(),
  userAgent,
  fieldValidation: rarely(fc.constantFrom('Strict' as const, 'Warn' as const, 'Ignore' as const)),
  unknownField: rarely(fc.constant(true)),
  repeatedKey: rarely(fc.constantFrom('top' as const, 'metadata' as const, 'spec' as const)),
  wrongType: rarely(fc.constantFrom('kind' as const, 'version' as const, 'group' as const)),
}).chain((a) => (a.sub === 'status'
  ? fc.record({ status: fc.record({ observedGeneration }), labels: fc.option(labels, { nil: undefined, freq: 3 }) }, { requiredKeys: ['status'] }).map((c): Config => c)
  : config(fc.integer({ min: 0, max: 99 }).map((n) => n < fullSpecPercent))
).map((cfg): Step => {
  const step: Step = { op: 'apply', sub: a.sub, config: cfg, yaml: a.yaml };
  if (a.manager !== undefined) step.manager = a.manager;
  if (a.force) step.force = true;
  if (a.dryRun) step.dryRun = true;
  if (a.userAgent !== undefined) step.userAgent = a.userAgent;
  if (a.fieldValidation) step.fieldValidation = a.fieldValidation;
  if (a.unknownField) step.unknownField = true;
  if (a.repeatedKey) step.repeatedKey = a.repeatedKey;
  if (a.wrongType) step.wrongType = a.wrongType;
  return step;
}));

const createStep: fc.Arbitrary<Step> = fc.record({ config: config(fc.integer({ min: 0, max: 9 }).map((n) => n !== 0)), w: writer })
  .map(({ config: c, w }) => ({ op: 'create' as const, config: c, w }));

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: applyStep(20) },
  { weight: 1, arbitrary: createStep },
  { weight: 3, arbitrary: fc.record({ sub, w: writer, withoutResourceVersion: fc.integer({ min: 0, max: 9 }).map((n) => n === 0) })
    .chain(({ sub: s, w, withoutResourceVersion }) => (s === 'status' ? statusChange : change)
      .map((c): Step => ({ op: 'update', sub: s, change: c, w, ...(withoutResourceVersion ? { withoutResourceVersion } : {}) }))) },
  { weight: 3, arbitrary: fc.record({ sub, w: writer }).chain(({ sub: s, w }) => (s === 'status' ? statusChange : change).map((c): Step => ({ op: 'merge', sub: s, change: c, w }))) },
  { weight: 2, arbitrary: fc.record({ ops: fc.array(jsonOp, { minLength: 1, maxLength: 3 }), w: writer }).map(({ ops, w }): Step => ({ op: 'json', sub: 'main', ops, w })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((n): Step => (n === 0 ? { op: 'delete', dryRun: true } : { op: 'delete' })) },
  { weight: 1, arbitrary: fc.constant<Step>({ op: 'get' }) },
);

/** A sequence on one object: mostly it starts by creating it (POST or apply), sometimes not. */
export const sequenceArb: fc.Arbitrary<Sequence> = fc.tuple(
  fc.oneof({ weight: 3, arbitrary: createStep.map((s) => [s]) }, { weight: 3, arbitrary: applyStep(90).map((s) => [s]) }, { weight: 1, arbitrary: fc.constant<Step[]>([]) }),
  fc.array(step, { minLength: 0, maxLength: 8 }),
).map(([first, rest]) => ({ steps: [...first, ...rest] }));
