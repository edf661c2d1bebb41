// The Llama as this controller sees it (farm.example.com/v1alpha), and the names it owns.
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';

export const GROUP = 'farm.example.com';
export const VERSION = 'v1alpha';
export const PLURAL = 'llamas';
export const KIND = 'Llama';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Domain-qualified, as finalizers not from Kubernetes itself must be. */
export const FINALIZER = 'farm.example.com/llama-controller';
/** fieldManager of every write, and the Events' reporting component. */
export const CONTROLLER_NAME = 'llama-controller';

/** metav1.Condition */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface LlamaStatus {
  conditions?: Condition[];
  observedGeneration?: number;
}

export interface Llama extends KubernetesObject {
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec?: Record<string, unknown>;
  status?: LlamaStatus;
}

/** The work-queue key of a llama: namespace/name, as client-go's MetaNamespaceKeyFunc. */
export function keyOf(l: { metadata?: V1ObjectMeta }): string {
  return `${l.metadata?.namespace ?? ''}/${l.metadata?.name ?? ''}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export function hasFinalizer(l: Llama): boolean {
  return (l.metadata.finalizers ?? []).includes(FINALIZER);
}

/** A JSON value from the API is a Llama if it has the metadata every stored llama has. */
export function asLlama(v: unknown): Llama {
  const meta = (v as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  if (typeof meta?.name !== 'string' || typeof meta.namespace !== 'string') {
    throw new Error(`not a namespaced object: ${JSON.stringify(v)?.slice(0, 200)}`);
  }
  return v as Llama;
}
