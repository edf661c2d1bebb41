// The resources this server serves. Adding a resource = one file + one line here.
import type { FastifyBaseLogger } from 'fastify';
import type { ResourceDefinition, ResourceDescriptor } from '../resource.js';
import type { ResourceStorage, StorageBackend } from '../../storage/backend.js';
import { memoryBackend } from '../../storage/memory/memoryBackend.js';
import type { Upstream } from '../../upstream/client.js';
import type { Reflector } from '../../upstream/reflector.js';
import { farmPodDefinition, FarmPodSource } from './farmpod.js';
import { llamaDefinition, llamaDescriptor } from './llama.js';

export interface ResourceContext {
  watchHistory: number;
  /** Where stored resources keep their objects (default: this process's memory). */
  storage?: StorageBackend;
  /** A garbage collector (kube-controller-manager) acts on orphan/foreground finalizers. */
  garbageCollection: boolean;
  /** The core API, when there is one: resources that mirror it need it. */
  upstream?: Upstream;
  log?: FastifyBaseLogger;
  now?: () => Date;
  /** Names for generateName (default: prefix + 5 random characters); tests make collisions with it. */
  generateName?: (prefix: string) => string;
}

export interface Resources {
  definitions: ResourceDefinition[];
  /** The backends of the stored resources, by plural (tests and benchmarks reach past the API with them). */
  stores: Map<string, ResourceStorage>;
  /** Upstream caches to start, stop and report in /readyz. */
  reflectors: { name: string; reflector: Reflector }[];
  /** Resources left out, and why (logged at start-up). */
  omitted: string[];
}

export function buildResources(ctx: ResourceContext): Resources {
  const backend = ctx.storage ?? memoryBackend();
  // Keys per group and resource, as kube's storage prefixes are ("<group>/<resource>").
  const storageFor = (d: ResourceDescriptor) => backend.forResource(`${d.group}/${d.plural}`, ctx.watchHistory);
  const llamas = storageFor(llamaDescriptor());
  const strategy = { garbageCollection: ctx.garbageCollection, now: ctx.now ?? (() => new Date()), generateName: ctx.generateName };
  const out: Resources = { definitions: [llamaDefinition(llamas, strategy)], stores: new Map([['llamas', llamas]]), reflectors: [], omitted: [] };
  if (ctx.upstream && ctx.log) {
    const farmPods = new FarmPodSource(ctx.upstream, llamas.view, ctx.log, ctx.watchHistory);
    out.definitions.push(farmPodDefinition(farmPods));
    out.reflectors.push({ name: 'farmpod-cache', reflector: farmPods.reflector });
  } else {
    out.omitted.push('farmpods: no kube-apiserver to read Pods from (start with --kubeconfig to serve them)');
  }
  return out;
}
