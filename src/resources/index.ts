// The resources this server serves. Adding a resource = one file + one line here.
import type { ResourceDefinition } from '../machinery/resource.js';
import { MemoryStore } from '../storage/memoryStore.js';
import { llamaDefinition } from './llama.js';

export interface ResourceContext {
  watchHistory: number;
  /** A garbage collector (kube-controller-manager) acts on orphan/foreground finalizers. */
  garbageCollection: boolean;
}

export function buildResources(ctx: ResourceContext): ResourceDefinition[] {
  const llamas = new MemoryStore({ groupResource: { group: 'farm.example.com', resource: 'llamas' }, historyLimit: ctx.watchHistory, garbageCollection: ctx.garbageCollection });
  return [llamaDefinition(llamas)];
}
