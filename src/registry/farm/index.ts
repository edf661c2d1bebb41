// The resources this server serves. Adding a resource = one file + one line here.
import type { FastifyBaseLogger } from 'fastify';
import type { ResourceDefinition } from '../resource.js';
import { MemoryStore } from '../../storage/memoryStore.js';
import type { Upstream } from '../../upstream/client.js';
import type { Reflector } from '../../upstream/reflector.js';
import { farmPodDefinition, FarmPodSource } from './farmpod.js';
import { llamaDefinition } from './llama.js';

export interface ResourceContext {
  watchHistory: number;
  /** A garbage collector (kube-controller-manager) acts on orphan/foreground finalizers. */
  garbageCollection: boolean;
  /** The core API, when there is one: resources that mirror it need it. */
  upstream?: Upstream;
  log?: FastifyBaseLogger;
}

export interface Resources {
  definitions: ResourceDefinition[];
  /** Upstream caches to start, stop and report in /readyz. */
  reflectors: { name: string; reflector: Reflector }[];
  /** Resources left out, and why (logged at start-up). */
  omitted: string[];
}

export function buildResources(ctx: ResourceContext): Resources {
  const llamas = new MemoryStore({ groupResource: { group: 'farm.example.com', resource: 'llamas' }, historyLimit: ctx.watchHistory, garbageCollection: ctx.garbageCollection });
  const out: Resources = { definitions: [llamaDefinition(llamas)], reflectors: [], omitted: [] };
  if (ctx.upstream && ctx.log) {
    const farmPods = new FarmPodSource(ctx.upstream, llamas.cache, ctx.log, ctx.watchHistory);
    out.definitions.push(farmPodDefinition(farmPods));
    out.reflectors.push({ name: 'farmpod-cache', reflector: farmPods.reflector });
  } else {
    out.omitted.push('farmpods: no kube-apiserver to read Pods from (start with --kubeconfig to serve them)');
  }
  return out;
}
