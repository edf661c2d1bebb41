// The media types we read and write, in one place (constants and pure functions only; the
// fastify-bound checks stay in bodies.ts).

/** What create/update/delete bodies may be (kube's serializers; a body without Content-Type is JSON). */
export const OBJECT_MEDIA_TYPES = ['application/json', 'application/yaml'];
export const APPLY_PATCH_MEDIA_TYPE = 'application/apply-patch+yaml';
export const PATCH_MEDIA_TYPES = ['application/json-patch+json', 'application/merge-patch+json', APPLY_PATCH_MEDIA_TYPE];

/** Patch content types we implement (OpenAPI). Strategic merge patch is deliberately absent: kubectl would send one. */
export const PATCH_CONTENT_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];

/** Aggregated discovery (apidiscovery.k8s.io APIGroupDiscoveryList), v2 and v2beta1. */
export const AGGREGATED_V2_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** The Content-Type's media type, lower case without parameters; '' when there is none. */
export function mediaTypeOf(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}
