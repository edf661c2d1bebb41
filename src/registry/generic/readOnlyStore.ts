// The read verbs of the generic registry (store.go's Get, List, Watch) over any storage Reader:
// keys from the request's namespace, selection predicates from the resource's selectable fields.
import { fieldSelectorSingleValue, matchesFields, parseFieldSelector } from '../../apimachinery/fields.js';
import { matchesLabels, parseLabelSelector } from '../../apimachinery/labels.js';
import type { ListOptions } from '../../apimachinery/options.js';
import { parseRV } from '../../apimachinery/resourceVersion.js';
import { errors, type GroupResource } from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { Entry, ListResult, Predicate, Reader, Watcher } from '../../storage/interfaces.js';
import { objectKey } from '../../storage/objects.js';
import { fieldValue, groupResource, selectableFields, type ResourceDescriptor } from '../resource.js';
import type { Readable, RequestContext } from '../rest.js';
import { interpreted, interpretStorageError } from './storageErrors.js';
import { inSpan } from '../../apimachinery/tracing.js';

export class ReadOnlyStore implements Readable {
  protected readonly gr: GroupResource;
  /** "llamas.farm.example.com", as kube's storage spans name the resource. */
  protected readonly resourceName: string;

  constructor(protected readonly def: ResourceDescriptor, protected readonly reader: Reader) {
    this.gr = groupResource(def);
    this.resourceName = this.gr.group ? `${this.gr.resource}.${this.gr.group}` : this.gr.resource;
  }

  unavailable(): string | undefined { return this.reader.unavailable(); }

  /** The storage key of an object (store.go's KeyFunc; the storage adds its own prefix). */
  protected keyFor(ctx: RequestContext, name: string): string {
    return objectKey(this.def.namespaced ? ctx.namespace : undefined, name);
  }

  /** Keys of a namespace share the prefix "ns/"; all namespaces (or cluster scope) is every key. */
  protected prefixFor(ctx: RequestContext): string {
    return this.def.namespaced && ctx.namespace ? `${ctx.namespace}/` : '';
  }

  async get(ctx: RequestContext, name: string, resourceVersion: string): Promise<Entry> {
    let entry: Entry | undefined;
    try {
      const key = this.keyFor(ctx, name);
      entry = await inSpan('storage.Get', () => ({ key, resource: this.resourceName, 'resource-version': resourceVersion }),
        () => this.reader.get(key, resourceVersion));
    } catch (e) {
      interpretStorageError(e, this.gr, name);
    }
    if (!entry) throw errors.notFound(this.gr, name);
    return entry;
  }

  async list(ctx: RequestContext, opts: ListOptions): Promise<ListResult> {
    const predicate = this.predicate(ctx, opts);
    const prefix = this.prefixFor(ctx);
    return inSpan('storage.GetList', () => ({
      key: prefix, resource: this.resourceName, resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch, limit: opts.limit, continue: opts.continue,
    }), () => interpreted(this.gr, '', () => this.reader.list({
      prefix, resourceVersion: opts.resourceVersion, resourceVersionMatch: opts.resourceVersionMatch,
      continue: opts.continue, limit: opts.limit, predicate,
    })));
  }

  /** From the RV on (an RV ahead of this server waits for it first), or the current state then changes. */
  async watch(ctx: RequestContext, opts: ListOptions, capacity: number): Promise<Watcher> {
    const predicate = this.predicate(ctx, opts);
    const rv = parseRV(opts.resourceVersion);
    const initial = opts.sendInitialEvents ?? (rv === undefined || rv === 0);
    return interpreted(this.gr, '', async () => {
      if (!initial) await this.reader.waitUntilFresh(opts.resourceVersion);
      return this.reader.watch({
        prefix: this.prefixFor(ctx), fromRV: initial ? undefined : rv, initialState: initial,
        initialEndMarker: opts.sendInitialEvents === true, predicate, capacity,
      });
    });
  }

  /** Label and field selectors (400 when they do not parse or name a field this resource cannot select by). */
  predicate(ctx: RequestContext, opts: Pick<ListOptions, 'labelSelector' | 'fieldSelector'>): Predicate {
    const def = this.def;
    const labels = parseLabelSelector(opts.labelSelector);
    const fields = parseFieldSelector(opts.fieldSelector, selectableFields(def));
    const hasLabels = opts.labelSelector.trim() !== '';
    const hasFields = opts.fieldSelector.trim() !== '';
    const matches = hasLabels || hasFields
      ? (obj: KubeObject) => (!hasLabels || matchesLabels(labels, obj.metadata.labels)) && (!hasFields || matchesFields(fields, (f) => fieldValue(def, obj, f)))
      : undefined;
    const name = hasFields ? fieldSelectorSingleValue(fields, 'metadata.name') : undefined;
    const namespace = def.namespaced ? ctx.namespace : undefined;
    const onlyKey = name !== undefined && (namespace || !def.namespaced) ? objectKey(namespace, name) : undefined;
    return { matches, onlyKey };
  }
}
