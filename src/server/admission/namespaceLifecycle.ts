// NamespaceLifecycle admission: no new objects in a namespace that does not exist or is terminating.
import type { FastifyBaseLogger } from 'fastify';
import { errors, type GroupResource } from '../../apimachinery/status.js';
import type { Upstream } from '../../upstream/client.js';
import { Reflector, type RawObject } from '../../upstream/reflector.js';

export class NamespaceLifecycle {
  private readonly phases = new Map<string, string>();
  readonly reflector: Reflector;

  constructor(private readonly upstream: Upstream, log: FastifyBaseLogger) {
    const phase = (o: RawObject) => ((o.status as { phase?: string } | undefined)?.phase ?? 'Active');
    this.reflector = new Reflector(upstream, { purpose: 'namespaces', path: '/api/v1/namespaces', log }, {
      replace: (items) => {
        this.phases.clear();
        for (const o of items) if (o.metadata?.name) this.phases.set(o.metadata.name, phase(o));
      },
      event: (type, o) => {
        const name = o.metadata?.name;
        if (!name) return;
        if (type === 'DELETED') this.phases.delete(name);
        else this.phases.set(name, phase(o));
      },
    });
  }

  /** Throws upstream's NotFound / Forbidden(NamespaceTerminating); a cache miss is confirmed live. */
  async admitCreate(gr: GroupResource, namespace: string | undefined, name: string): Promise<void> {
    if (!namespace) return;
    let phase = this.phases.get(namespace);
    if (phase === undefined) {
      const res = await this.upstream.request<RawObject>('namespace-lookup', 'GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}`);
      if (res.status === 404) throw errors.notFound({ group: '', resource: 'namespaces' }, namespace);
      if (res.status !== 200) throw errors.internal(`namespace lookup failed: HTTP ${res.status}`);
      phase = ((res.body.status as { phase?: string } | undefined)?.phase) ?? 'Active';
    }
    if (phase === 'Terminating') {
      const message = `unable to create new content in namespace ${namespace} because it is being terminated`;
      throw errors.forbidden(`${gr.resource}.${gr.group} "${name}" is forbidden: ${message}`, {
        name, group: gr.group, kind: gr.resource, causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }],
      });
    }
  }
}
