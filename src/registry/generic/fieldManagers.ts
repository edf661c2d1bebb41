// The field manager of a resource's endpoint: its type model comes from the resource's registered
// schema (the one OpenAPI publishes), so a new resource gets managedFields and server-side apply as is.
import { FieldManager } from '../../apimachinery/managedfields/fieldManager.js';
import { kindSchemaName } from '../../apimachinery/schema/registry.js';
import { atomOfRegistered } from '../../apimachinery/smd/schema.js';
import type { Path } from '../../apimachinery/smd/pathElement.js';
import type { ResourceDescriptor } from '../resource.js';
import { resetFieldsOf } from './strategy.js';

/** The strategy's reset fields, never owned by a writer through this endpoint. */
function resetFields(def: ResourceDescriptor, subresource: '' | 'status'): Path[] {
  return resetFieldsOf(def)[subresource].map((p) => p.map((field) => ({ field })));
}

export function fieldManagerFor(def: ResourceDescriptor, subresource: '' | 'status', now: () => Date): FieldManager {
  const atom = atomOfRegistered(kindSchemaName(def));
  return new FieldManager({ atom, group: def.group, version: def.version, kind: def.kind, subresource, resetFields: resetFields(def, subresource), now });
}
