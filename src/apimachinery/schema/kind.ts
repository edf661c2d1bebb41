// The helper resources use to declare their Kind schema: the whole object around meta/v1 ObjectMeta,
// registered under its upstream-style name.
import { z } from 'zod';
import { describedOf, registerKind } from './registry.js';
import { ObjectMeta, docs } from './metav1.js';

export interface KindSchemaOptions {
  group: string;
  version: string;
  kind: string;
  /** The Kind's description (what `kubectl explain <kind>` prints first). */
  description: string;
  /** The spec schema. Give it (and every field in it) a description; it is required unless you pass it optional. */
  spec: z.ZodType;
  /** Optional status schema; always optional on the object. */
  status?: z.ZodType;
}

/**
 * The whole object schema (apiVersion, kind, metadata, spec, status) for a Kind, registered under its
 * upstream-style OpenAPI name (com.example.farm.v1alpha.Llama) with `x-kubernetes-group-version-kind`.
 * Call it once per Kind (at module scope); calling it again for the same GVK replaces the registration.
 */
export function kindSchema(opts: KindSchemaOptions): z.ZodType {
  const described = (s: z.ZodType, fallback: string) => (describedOf(s) ? s : s.describe(fallback));
  const shape: Record<string, z.ZodType> = {
    apiVersion: z.string().optional().describe(docs.apiVersion),
    kind: z.string().optional().describe(docs.kind),
    metadata: ObjectMeta.default({}).describe(docs.objectMetadata),
    spec: described(opts.spec, `Specification of the desired behavior of the ${opts.kind}.`),
  };
  if (opts.status) {
    shape.status = described(opts.status, `Most recently observed status of the ${opts.kind}. Populated by the system. Read-only.`).optional();
  }
  const schema = z.object(shape);
  registerKind(opts, schema, opts.description);
  return schema;
}
