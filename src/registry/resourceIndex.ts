// The served resources looked up by group, version and plural: built once, read on every request.
import type { ResourceDefinition } from './resource.js';

export class ResourceIndex {
  private readonly byPath = new Map<string, ResourceDefinition>();

  constructor(readonly all: readonly ResourceDefinition[]) {
    for (const def of all) this.byPath.set(`${def.group}/${def.version}/${def.plural}`, def);
  }

  lookup(group: string, version: string, plural: string): ResourceDefinition | undefined {
    return this.byPath.get(`${group}/${version}/${plural}`);
  }

  /** The resources of each group-version, in the order they were given. */
  groupVersions(): ResourceDefinition[][] {
    const groups = new Map<string, ResourceDefinition[]>();
    for (const def of this.all) {
      const gv = `${def.group}/${def.version}`;
      groups.set(gv, [...(groups.get(gv) ?? []), def]);
    }
    return [...groups.values()];
  }
}
