// The FarmPod resource: one per live Pod of the core API, enriched with what a user wants at a
// glance, served read-only from a list+watch cache (zero upstream calls per request).
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { ReadOnlyStore } from '../generic/readOnlyStore.js';
import type { ResourceDefinition, ResourceDescriptor } from '../resource.js';
import type { Readable, RequestContext } from '../rest.js';
import type { ListOptions } from '../../apimachinery/options.js';
import { interpreted } from '../generic/storageErrors.js';
import { docs, int64 } from '../../apimachinery/schema/metav1.js';
import { kindSchema } from '../../apimachinery/schema/kind.js';
import { ageCell, ageOf, timedCell } from '../tableCells.js';
import type { KubeObject } from '../../apimachinery/types.js';
import { ObjectCache } from '../../storage/cacher/objectCache.js';
import type { CacheView, Change, Entry, Watcher } from '../../storage/interfaces.js';
import { makeEntry, objectKey } from '../../storage/objects.js';
import type { Upstream } from '../../upstream/client.js';
import { Reflector, type RawObject } from '../../upstream/reflector.js';
import { restartsText, summarizePod, type PodLike } from './podStatus.js';
import { FarmPodReader, PositionLog, type StepCause } from './farmPodReader.js';
import { formatPosition, parseFarmPodRV } from './farmPodRV.js';

const GROUP = 'farm.example.com';
const VERSION = 'v1alpha';
export const LLAMA_LABEL = 'farm.example.com/llama';

const Container = z.object({
  name: z.string().describe('Name of the container in the Pod.'),
  image: z.string().optional().describe('Container image the Pod runs.'),
}).describe('A container of the Pod.');

const FarmPodSpec = z.object({
  nodeName: z.string().optional().describe('Node the Pod is scheduled to; empty while Pending.'),
  containers: z.array(Container).describe('The Pod\'s (app) containers with their images.'),
  controlledBy: z.object({
    kind: z.string().describe('Kind of the controlling owner, e.g. ReplicaSet.'),
    name: z.string().describe('Name of the controlling owner.'),
  }).optional().describe('The Pod\'s controlling owner reference, if any.'),
}).describe('FarmPodSpec summarizes what the Pod asks for.');

const LlamaSummary = z.object({
  name: z.string().describe(`Name of the Llama named by the Pod's "${LLAMA_LABEL}" label, in the Pod's namespace.`),
  found: z.boolean().describe('Whether that Llama exists.'),
  weight: z.number().optional().describe('The Llama\'s weight in kilograms.'),
  height: z.number().optional().describe('The Llama\'s height in metres.'),
  color: z.string().optional().describe('The Llama\'s colour.'),
}).describe(`Summary of the Llama the Pod is labelled with ("${LLAMA_LABEL}"), kept current as the Llama changes.`);

const FarmPodStatus = z.object({
  phase: z.string().optional().describe('The Pod\'s phase: Pending, Running, Succeeded, Failed or Unknown.'),
  status: z.string().describe('Human-readable status as kubectl\'s STATUS column prints it (e.g. Running, CrashLoopBackOff, Terminating).'),
  ready: z.string().describe('Ready containers out of total, e.g. "1/2".'),
  readyContainers: int64().describe('Number of ready containers.'),
  totalContainers: int64().describe('Number of containers (app containers plus restartable init containers).'),
  restarts: int64().describe('Container restarts, counted as kubectl counts them.'),
  lastRestartTime: z.string().optional().describe('When a container last terminated before restarting (RFC 3339).'),
  podIP: z.string().optional().describe('The Pod\'s IP address, once assigned.'),
  qosClass: z.string().optional().describe('Quality of Service class: Guaranteed, Burstable or BestEffort.'),
  llama: LlamaSummary.optional(),
}).describe('FarmPodStatus is the observed state of the Pod, summarized.');

export const FarmPodSchema = kindSchema({
  group: GROUP, version: VERSION, kind: 'FarmPod',
  description: 'FarmPod is a read-only view of a live Pod, enriched with a summary (readiness, restarts, owner, and the Llama it tends).',
  spec: FarmPodSpec, status: FarmPodStatus,
});

type Pod = PodLike & RawObject & {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; controller?: boolean }[] };
  spec?: Omit<NonNullable<PodLike['spec']>, 'containers'> & { nodeName?: string; containers?: { name: string; image?: string }[] };
  status?: PodLike['status'] & { podIP?: string; qosClass?: string };
};

/** A stable uid of the FarmPod's own, derived from its Pod's (name-based, like a UUIDv5). */
export function farmPodUid(podUid: string): string {
  const h = createHash('sha1').update(`farm.example.com/FarmPod/${podUid}`).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

type LlamaLookup = (namespace: string, name: string) => KubeObject | undefined;

/** The FarmPod of `pod`; `resourceVersion` is its FarmPod position (the Pod's own when omitted, as a pure view). */
export function toFarmPod(pod: Pod, llama: LlamaLookup, resourceVersion = pod.metadata?.resourceVersion): KubeObject {
  const m = pod.metadata ?? {};
  const summary = summarizePod(pod);
  const owner = (m.ownerReferences ?? []).find((r) => r.controller);
  const metadata: KubeObject['metadata'] = {
    name: m.name, namespace: m.namespace, uid: m.uid ? farmPodUid(m.uid) : undefined,
    resourceVersion, creationTimestamp: m.creationTimestamp,
  };
  if (m.deletionTimestamp) metadata.deletionTimestamp = m.deletionTimestamp;
  if (m.labels) metadata.labels = m.labels;
  const status: Record<string, unknown> = { phase: pod.status?.phase, ...summary, podIP: pod.status?.podIP, qosClass: pod.status?.qosClass };
  const llamaName = m.labels?.[LLAMA_LABEL];
  if (llamaName && m.namespace) {
    const l = llama(m.namespace, llamaName);
    const s = (l?.spec ?? {}) as { weight?: number; height?: number; color?: string };
    status.llama = l ? { name: llamaName, found: true, weight: s.weight, height: s.height, color: s.color } : { name: llamaName, found: false };
  }
  return {
    apiVersion: `${GROUP}/${VERSION}`, kind: 'FarmPod', metadata,
    spec: {
      nodeName: pod.spec?.nodeName,
      containers: (pod.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image })),
      ...(owner ? { controlledBy: { kind: owner.kind, name: owner.name } } : {}),
    },
    status,
  };
}

/**
 * Pods list+watched into FarmPods; llama changes re-enrich the pods that name them. Each Pod event and
 * each Llama change that alters FarmPods is one step of the cache, stamped with the FarmPod position
 * "<pod>.<llama>" it reaches (farmPodRV.ts, docs/farmpods.md).
 */
export class FarmPodSource {
  /** Fed only by this source, ordered by local step numbers; requests read it through `reader`. */
  readonly cache: ObjectCache;
  readonly reader: FarmPodReader;
  readonly reflector: Reflector;
  readonly positions: PositionLog;
  private readonly pods = new Map<string, Pod>();
  /** "ns/llama" → keys of the pods labelled with it. */
  private readonly byLlama = new Map<string, Set<string>>();
  private readonly lookup: LlamaLookup;
  private step = 0;
  /** The Pod stream's position: the last list, event or bookmark. */
  private podRV = 0;

  constructor(upstream: Upstream, private readonly llamas: CacheView, log: FastifyBaseLogger, historyLimit: number) {
    this.cache = new ObjectCache(historyLimit);
    this.positions = new PositionLog(() => ({ pod: this.podRV, llama: this.llamas.resourceVersion }));
    this.reader = new FarmPodReader(this.cache, this.positions, () => this.unavailable());
    this.lookup = (ns, name) => llamas.get(objectKey(ns, name))?.object;
    this.reflector = new Reflector(upstream, { purpose: 'pods', path: '/api/v1/pods', log }, {
      replace: (items, rv) => this.replace(items as Pod[], Number(rv) || this.podRV),
      event: (type, obj) => this.event(type, obj as Pod),
      progress: (rv) => { this.podRV = Math.max(this.podRV, Number(rv) || 0); },
    });
    llamas.subscribe((c) => this.llamasChanged([c.entry.key]));
    // A relist of the llamas (an etcd3 replica's first fill) replaces them without changes: look at every embedded one.
    llamas.onReset(() => this.llamasChanged(this.byLlama.keys()));
  }

  unavailable(): string | undefined {
    if (this.reflector.synced) return undefined;
    const why = this.reflector.lastError ? `: ${this.reflector.lastError}` : '';
    return `the FarmPod cache is not synced with kube-apiserver${why}`;
  }

  /** A relist: every FarmPod is stamped with the position it starts from (older positions get 410). */
  private replace(items: Pod[], podRV: number): void {
    this.pods.clear();
    this.byLlama.clear();
    this.podRV = podRV;
    const pos = this.positions.current();
    const seq = ++this.step;
    const rv = formatPosition(pos);
    const entries = items.map((p) => {
      const key = this.track(p);
      return makeEntry(key, toFarmPod(p, this.lookup, rv), seq);
    });
    this.cache.reset(entries, seq);
    this.positions.reset(seq, pos);
  }

  private event(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod): void {
    const key = objectKey(pod.metadata?.namespace, pod.metadata?.name ?? '');
    this.podRV = Math.max(Number(pod.metadata?.resourceVersion) || 0, this.podRV);
    const prev = this.cache.get(key);
    this.untrack(key);
    if (type === 'DELETED' && !prev) return;
    if (type !== 'DELETED') this.track(pod);
    const { seq, rv } = this.nextStep('pod');
    const entry = makeEntry(key, toFarmPod(pod, this.lookup, rv), seq);
    this.apply({ type: type === 'DELETED' ? 'DELETED' : prev ? 'MODIFIED' : 'ADDED', rv: seq, entry, prev });
  }

  /** Llama edits change the FarmPods that embed them: one step for all of them, at the llamas' position. */
  private llamasChanged(llamaKeys: Iterable<string>): void {
    const changed: { pod: Pod; prev: Entry }[] = [];
    for (const llamaKey of llamaKeys) {
      for (const key of this.byLlama.get(llamaKey) ?? []) {
        const pod = this.pods.get(key);
        const prev = this.cache.get(key);
        if (!pod || !prev) continue;
        // Compared at the FarmPod's current resourceVersion: only a different summary is a change.
        if (JSON.stringify(toFarmPod(pod, this.lookup, prev.object.metadata.resourceVersion)) !== prev.json) changed.push({ pod, prev });
      }
    }
    if (changed.length === 0) return;
    const { seq, rv } = this.nextStep('llama');
    for (const { pod, prev } of changed) {
      this.apply({ type: 'MODIFIED', rv: seq, entry: makeEntry(prev.key, toFarmPod(pod, this.lookup, rv), seq), prev });
    }
  }

  private nextStep(by: StepCause): { seq: number; rv: string } {
    const pos = this.positions.current();
    const seq = ++this.step;
    this.positions.record(seq, pos, by);
    return { seq, rv: formatPosition(pos) };
  }

  private apply(change: Change): void {
    this.cache.apply(change);
    this.positions.prune(this.cache.oldestRV);
  }

  private track(pod: Pod): string {
    const key = objectKey(pod.metadata?.namespace, pod.metadata?.name ?? '');
    // Kept raw (no field lost) to re-enrich on llama edits; managedFields is most of a Pod's bytes and never read.
    if (pod.metadata && 'managedFields' in pod.metadata) delete (pod.metadata as Record<string, unknown>).managedFields;
    this.pods.set(key, pod);
    const llama = pod.metadata?.labels?.[LLAMA_LABEL];
    if (llama) {
      const lk = objectKey(pod.metadata?.namespace, llama);
      let set = this.byLlama.get(lk);
      if (!set) this.byLlama.set(lk, (set = new Set()));
      set.add(key);
    }
    return key;
  }

  private untrack(key: string): void {
    const pod = this.pods.get(key);
    this.pods.delete(key);
    const llama = pod?.metadata?.labels?.[LLAMA_LABEL];
    if (!llama) return;
    const lk = objectKey(pod?.metadata?.namespace, llama);
    const set = this.byLlama.get(lk);
    // Drop emptied sets: llama names come and go with Pods, the index must not keep them all.
    if (set?.delete(key) && set.size === 0) this.byLlama.delete(lk);
  }
}

type FarmPodStatusT = z.infer<typeof FarmPodStatus>;
type FarmPodSpecT = z.infer<typeof FarmPodSpec>;
const st = (o: KubeObject) => (o.status ?? {}) as Partial<FarmPodStatusT>;
const sp = (o: KubeObject) => (o.spec ?? {}) as Partial<FarmPodSpecT>;
const orNone = (v: string | undefined) => (v ? v : '<none>');

/** FarmPods are read-only: get, list and watch from the source's cache. */
export function farmPodDefinition(source: FarmPodSource): ResourceDefinition {
  const def = farmPodDescriptor();
  const rest = new FarmPodStore(def, source.reader) satisfies Readable;
  return { ...def, rest };
}

/** The generic read-only store, but a watch's resourceVersion is a FarmPod position, not a number. */
class FarmPodStore extends ReadOnlyStore {
  constructor(def: ResourceDescriptor, private readonly farmPods: FarmPodReader) {
    super(def, farmPods);
  }

  override async watch(ctx: RequestContext, opts: ListOptions, capacity: number): Promise<Watcher> {
    const predicate = this.predicate(ctx, opts);
    const rv = parseFarmPodRV(opts.resourceVersion);
    const initial = opts.sendInitialEvents ?? rv.kind !== 'at';
    return interpreted(this.gr, '', () => this.farmPods.watchFrom(rv, {
      prefix: this.prefixFor(ctx), initialState: initial, initialEndMarker: opts.sendInitialEvents === true, predicate, capacity,
    }));
  }
}

export function farmPodDescriptor(): ResourceDescriptor {
  return {
    group: GROUP, version: VERSION, kind: 'FarmPod', plural: 'farmpods', singular: 'farmpod',
    shortNames: ['fp'], categories: ['farm'], namespaced: true,
    description: 'FarmPod is a read-only view of a live Pod, enriched with a summary.',
    schema: FarmPodSchema,
    columns: [
      { name: 'Name', type: 'string', format: 'name', description: docs.name, priority: 0, cell: (o) => o.metadata.name ?? '' },
      { name: 'Ready', type: 'string', description: 'Ready containers out of total.', priority: 0, cell: (o) => st(o).ready ?? '' },
      { name: 'Status', type: 'string', description: 'Status as kubectl prints it for Pods.', priority: 0, cell: (o) => st(o).status ?? '' },
      { name: 'Restarts', type: 'string', description: 'Container restarts.', priority: 0, cell: restartsCell },
      { name: 'Llama', type: 'string', description: 'The Llama this Pod tends, with its colour and weight.', priority: 0, cell: (o) => llamaCell(st(o).llama) },
      { name: 'Age', type: 'date', description: docs.creationTimestamp, priority: 0, cell: ageCell },
      { name: 'IP', type: 'string', description: 'Pod IP.', priority: 1, cell: (o) => orNone(st(o).podIP) },
      { name: 'Node', type: 'string', description: 'Node the Pod runs on.', priority: 1, cell: (o) => orNone(sp(o).nodeName) },
      { name: 'QoS', type: 'string', description: 'Quality of Service class.', priority: 1, cell: (o) => orNone(st(o).qosClass) },
      { name: 'Owner', type: 'string', description: 'Controlling owner (kind/name).', priority: 1, cell: (o) => { const c = sp(o).controlledBy; return c ? `${c.kind}/${c.name}` : '<none>'; } },
      { name: 'Images', type: 'string', description: 'Container images.', priority: 1, cell: (o) => (sp(o).containers ?? []).map((c) => c.image ?? '').join(',') },
    ],
    fieldSelectors: {
      'spec.nodeName': (o) => sp(o).nodeName ?? '',
      'status.phase': (o) => st(o).phase ?? '',
    },
    alsoRequires: (info) => [{
      info: { ...info, apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '' },
      why: `FarmPods show Pods: ${info.verb} on farmpods also needs ${info.verb} on pods`,
    }],
  };
}

/** RESTARTS, e.g. "3 (5m ago)": its text changes when the age of the last restart does. */
const restartsCell = timedCell((o, now) => {
  const restarts = st(o).restarts ?? 0;
  const lastRestartTime = st(o).lastRestartTime;
  const value = restartsText(restarts, lastRestartTime, now);
  return { value, until: restarts !== 0 && lastRestartTime ? ageOf(lastRestartTime, now).until : Infinity };
});

function llamaCell(l: FarmPodStatusT['llama']): string {
  if (!l) return '<none>';
  if (!l.found) return `${l.name} (missing)`;
  return `${l.name} (${l.color ?? '?'}, ${l.weight ?? '?'}kg)`;
}
