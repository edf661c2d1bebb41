// The controller's requests for llamas, with @kubernetes/client-node 1.x's CustomObjectsApi.
// Server-side apply: client-node sends patches as JSON (valid YAML), so the apply content type is
// set with setHeaderOptions; every request has a deadline, so a stuck connection cannot stall a worker.
import {
  ApiException, CustomObjectsApi, KubeConfig, Observable, PatchStrategy, setHeaderOptions,
  type ConfigurationOptions, type KubernetesListObject, type ObservableMiddleware,
} from '@kubernetes/client-node';
import { API_VERSION, asLlama, CONTROLLER_NAME, FINALIZER, GROUP, KIND, PLURAL, VERSION, type Llama, type LlamaStatus } from './llama.js';

/** A per-request deadline (client-node 1.x has none by default). */
export function requestTimeout(ms: number): ConfigurationOptions<ObservableMiddleware> {
  return {
    middleware: [{
      pre: (ctx) => { ctx.setSignal(AbortSignal.timeout(ms)); return new Observable(Promise.resolve(ctx)); },
      post: (res) => new Observable(Promise.resolve(res)),
    }],
    middlewareMergeStrategy: 'append',
  };
}

/** The HTTP status of a failed client-node call, if it got an answer. */
export function httpCode(e: unknown): number | undefined {
  return e instanceof ApiException ? e.code : undefined;
}

export interface LlamaApi {
  /** LIST for the informer: one namespace, or all. */
  list(): Promise<KubernetesListObject<Llama>>;
  /** The path the informer watches. */
  readonly watchPath: string;
  /** GET; undefined when it is gone. */
  get(namespace: string, name: string): Promise<Llama | undefined>;
  /**
   * Server-side apply of metadata.finalizers on the llama: with it, the controller (co-)owns its
   * finalizer; without it, the controller's entry goes, and so does the finalizer unless someone else
   * also owns it. finalizers is a set (x-kubernetes-list-type: set): other finalizers are untouched.
   */
  applyFinalizer(llama: Llama, present: boolean): Promise<Llama>;
  /** Server-side apply on /status, forced: the controller owns the fields it sends. */
  applyStatus(llama: Llama, status: LlamaStatus): Promise<Llama>;
}

export function llamaApi(kc: KubeConfig, opts: { namespace?: string; timeoutMs: number }): LlamaApi {
  const api = kc.makeApiClient(CustomObjectsApi);
  const deadline = requestTimeout(opts.timeoutMs);
  const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, deadline);
  const ns = opts.namespace;
  const identity = (l: Llama) => ({ group: GROUP, version: VERSION, plural: PLURAL, namespace: l.metadata.namespace, name: l.metadata.name });
  const head = (l: Llama) => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name: l.metadata.name, namespace: l.metadata.namespace } });

  return {
    watchPath: ns ? `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(ns)}/${PLURAL}` : `/apis/${GROUP}/${VERSION}/${PLURAL}`,
    async list() {
      const res: unknown = ns
        ? await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: ns }, deadline)
        : await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }, deadline);
      const list = res as { items?: unknown; metadata?: { resourceVersion?: string } };
      if (!Array.isArray(list.items)) throw new Error('LIST answer has no items');
      return { metadata: list.metadata, items: list.items.map(asLlama) };
    },
    async get(namespace, name) {
      try {
        return asLlama(await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name }, deadline));
      } catch (e) {
        if (httpCode(e) === 404) return undefined;
        throw e;
      }
    },
    async applyFinalizer(llama, present) {
      const h = head(llama);
      const body = present ? { ...h, metadata: { ...h.metadata, finalizers: [FINALIZER] } } : h;
      return asLlama(await api.patchNamespacedCustomObject({ ...identity(llama), body, fieldManager: CONTROLLER_NAME }, apply));
    },
    async applyStatus(llama, status) {
      return asLlama(await api.patchNamespacedCustomObjectStatus(
        { ...identity(llama), body: { ...head(llama), status }, fieldManager: CONTROLLER_NAME, force: true }, apply));
    },
  };
}
