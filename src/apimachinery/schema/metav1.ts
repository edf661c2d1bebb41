// Zod schemas for the shared meta/v1 types, registered under upstream's OpenAPI names, and the
// upstream descriptions they share with Kind schemas and OpenAPI parameters.
import { z } from 'zod';
import { kubeRegistry, metaV1 } from './registry.js';

// ---- descriptions shared with upstream (k8s.io/apimachinery/pkg/apis/meta/v1 swagger docs) ----

export const docs = {
  apiVersion:
    'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
  kind:
    'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
  objectMetadata:
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
  listMetadata:
    'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
  name:
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
  creationTimestamp:
    'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
  dryRun:
    'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed',
  gracePeriodSeconds:
    'The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.',
  orphanDependents:
    'Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from the object\'s finalizers list. Either this field or PropagationPolicy may be set, but not both.',
  propagationPolicy:
    "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
};

/** int64 as upstream publishes it: `type: integer, format: int64` (the safe-integer bounds zod adds are dropped). */
export const int64 = () => z.int().meta({ format: 'int64' });
export const int32 = () => z.int().gte(-2147483648).lte(2147483647).meta({ format: 'int32' });

// ---- meta/v1 types ----

export const Time = z.string().meta({ format: 'date-time' });
kubeRegistry.add(Time, {
  id: metaV1('Time'),
  description:
    'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.',
});

export const FieldsV1 = z.looseObject({});
kubeRegistry.add(FieldsV1, {
  id: metaV1('FieldsV1'),
  description:
    "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
});

export const ManagedFieldsEntry = z.object({
  apiVersion: z.string().optional().describe(
    'APIVersion defines the version of this resource that this field set applies to. The format is "group/version" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted.'),
  fieldsType: z.string().optional().describe(
    'FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: "FieldsV1"'),
  fieldsV1: FieldsV1.optional().describe('FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.'),
  manager: z.string().optional().describe('Manager is an identifier of the workflow managing these fields.'),
  operation: z.string().optional().describe(
    "Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'."),
  subresource: z.string().optional().describe(
    'Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource.'),
  time: Time.optional().describe(
    "Time is the timestamp of when the ManagedFields entry was added. The timestamp will also be updated if a field is added, the manager changes any of the owned fields value or removes a field. The timestamp does not update when a field is removed from the entry because another manager took it over."),
});
kubeRegistry.add(ManagedFieldsEntry, {
  id: metaV1('ManagedFieldsEntry'),
  description:
    'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
});

export const OwnerReference = z.object({
  apiVersion: z.string().describe('API version of the referent.'),
  blockOwnerDeletion: z.boolean().optional().describe(
    'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. See https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion for how the garbage collector interacts with this field and enforces the foreground deletion. Defaults to false. To set this field, a user needs "delete" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned.'),
  controller: z.boolean().optional().describe('If true, this reference points to the managing controller.'),
  kind: z.string().describe(
    'Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds'),
  name: z.string().describe('Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names'),
  uid: z.string().describe('UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
});
kubeRegistry.add(OwnerReference, {
  id: metaV1('OwnerReference'),
  description:
    'OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.',
  'x-kubernetes-map-type': 'atomic',
});

export const ObjectMeta = z.object({
  annotations: z.record(z.string(), z.string()).optional().describe(
    'Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations'),
  creationTimestamp: Time.optional().describe(docs.creationTimestamp),
  deletionGracePeriodSeconds: int64().optional().describe(
    'Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only.'),
  deletionTimestamp: Time.optional().describe(
    'DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will react by sending a graceful termination signal to the containers in the pod. After that 30 seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and after cleanup, remove the pod from the API. In the presence of network partitions, this object may still exist after this timestamp, until an administrator or automated process can determine the resource is fully terminated. If not set, graceful deletion of the object has not been requested.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata'),
  finalizers: z.array(z.string()).optional().meta({
    description:
      'Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list.',
    'x-kubernetes-list-type': 'set',
    'x-kubernetes-patch-strategy': 'merge',
  }),
  generateName: z.string().optional().describe(
    'GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency'),
  generation: int64().optional().describe(
    'A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.'),
  labels: z.record(z.string(), z.string()).optional().describe(
    'Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels'),
  managedFields: z.array(ManagedFieldsEntry).optional().meta({
    description:
      'ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn\'t need to set or understand this field. A workflow can be the user\'s name, a controller\'s name, or the name of a specific apply path like "ci-cd". The set of fields is always in the version that the workflow used when modifying the object.',
    'x-kubernetes-list-type': 'atomic',
  }),
  name: z.string().optional().describe(docs.name),
  namespace: z.string().optional().describe(
    'Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the "default" namespace, but "default" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces'),
  ownerReferences: z.array(OwnerReference).optional().meta({
    description:
      'List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.',
    'x-kubernetes-list-map-keys': ['uid'],
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-patch-merge-key': 'uid',
    'x-kubernetes-patch-strategy': 'merge',
  }),
  resourceVersion: z.string().optional().describe(
    'An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency'),
  selfLink: z.string().optional().describe(
    'Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
  uid: z.string().optional().describe(
    'UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
});
kubeRegistry.add(ObjectMeta, {
  id: metaV1('ObjectMeta'),
  description:
    'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
});

export const ListMeta = z.object({
  continue: z.string().optional().describe(
    'continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects. Continuing a consistent list may not be possible if the server configuration has changed or more than a few minutes have passed. The resourceVersion field returned when using this continue value will be identical to the value in the first response, unless you have received this token from an error message.'),
  remainingItemCount: int64().optional().describe(
    'remainingItemCount is the number of subsequent items in the list which are not included in this list response. If the list request contained label or field selectors, then the number of remaining items is unknown and the field will be left unset and omitted during serialization. If the list is complete (either because it is not chunking or because this is the last chunk), then there are no more remaining items and this field will be left unset and omitted during serialization. Servers older than v1.15 do not set this field. The intended use of the remainingItemCount is *estimating* the size of a collection. Clients should not rely on the remainingItemCount to be set or to be exact.'),
  resourceVersion: z.string().optional().describe(
    "String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
  selfLink: z.string().optional().describe(
    'Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.'),
});
kubeRegistry.add(ListMeta, {
  id: metaV1('ListMeta'),
  description:
    'ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.',
});

export const StatusCause = z.object({
  field: z.string().optional().describe(
    'The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional.\n\nExamples:\n  "name" - the field "name" on the current resource\n  "items[0].name" - the field "name" on the first array entry in "items"'),
  message: z.string().optional().describe(
    'A human-readable description of the cause of the error.  This field may be presented as-is to a reader.'),
  reason: z.string().optional().describe(
    'A machine-readable description of the cause of the error. If this value is empty there is no information available.'),
});
kubeRegistry.add(StatusCause, {
  id: metaV1('StatusCause'),
  description:
    'StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.',
});

export const StatusDetails = z.object({
  causes: z.array(StatusCause).optional().meta({
    description:
      'The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes.',
    'x-kubernetes-list-type': 'atomic',
  }),
  group: z.string().optional().describe('The group attribute of the resource associated with the status StatusReason.'),
  kind: z.string().optional().describe(
    'The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds'),
  name: z.string().optional().describe(
    'The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described).'),
  retryAfterSeconds: int32().optional().describe(
    'If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action.'),
  uid: z.string().optional().describe(
    'UID of the resource. (when there is a single resource which can be described). More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids'),
});
kubeRegistry.add(StatusDetails, {
  id: metaV1('StatusDetails'),
  description:
    'StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.',
});

export const Status = z.object({
  apiVersion: z.string().optional().describe(docs.apiVersion),
  code: int32().optional().describe('Suggested HTTP return code for this status, 0 if not set.'),
  details: StatusDetails.optional().describe(
    'Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type.'),
  kind: z.string().optional().describe(docs.kind),
  message: z.string().optional().describe('A human-readable description of the status of this operation.'),
  metadata: ListMeta.default({}).describe(docs.listMetadata),
  reason: z.string().optional().describe(
    'A machine-readable description of why this operation is in the "Failure" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it.'),
  status: z.string().optional().describe(
    'Status of the operation. One of: "Success" or "Failure". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status'),
});
kubeRegistry.add(Status, {
  id: metaV1('Status'),
  description: "Status is a return value for calls that don't return other objects.",
  'x-kubernetes-group-version-kind': [{ group: '', kind: 'Status', version: 'v1' }],
});

export const Preconditions = z.object({
  resourceVersion: z.string().optional().describe('Specifies the target ResourceVersion'),
  uid: z.string().optional().describe('Specifies the target UID.'),
});
kubeRegistry.add(Preconditions, {
  id: metaV1('Preconditions'),
  description: 'Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.',
});

export const DeleteOptions = z.object({
  apiVersion: z.string().optional().describe(docs.apiVersion),
  dryRun: z.array(z.string()).optional().meta({ description: docs.dryRun, 'x-kubernetes-list-type': 'atomic' }),
  gracePeriodSeconds: int64().optional().describe(docs.gracePeriodSeconds),
  kind: z.string().optional().describe(docs.kind),
  orphanDependents: z.boolean().optional().describe(docs.orphanDependents),
  preconditions: Preconditions.optional().describe(
    'Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned.'),
  propagationPolicy: z.string().optional().describe(docs.propagationPolicy),
});
kubeRegistry.add(DeleteOptions, {
  id: metaV1('DeleteOptions'),
  description: 'DeleteOptions may be provided when deleting an API object.',
  'x-kubernetes-group-version-kind': [{ group: '', kind: 'DeleteOptions', version: 'v1' }],
});

export const Patch = z.looseObject({});
kubeRegistry.add(Patch, {
  id: metaV1('Patch'),
  description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.',
});

/**
 * metav1.Condition. The fields are optional to zod as they are to Go's decoder (a missing string is
 * ""): what is required, and the formats, are checked by validateConditions (conditions.ts) with
 * ValidateConditions' messages. The published schema lists upstream's `required` all the same.
 */
export const Condition = z.object({
  lastTransitionTime: Time.optional().describe(
    'lastTransitionTime is the last time the condition transitioned from one status to another. This should be when the underlying condition changed.  If that is not known, then using the time when the API field changed is acceptable.'),
  message: z.string().optional().describe(
    'message is a human readable message indicating details about the transition. This may be an empty string.'),
  observedGeneration: int64().optional().describe(
    'observedGeneration represents the .metadata.generation that the condition was set based upon. For instance, if .metadata.generation is currently 12, but the .status.conditions[x].observedGeneration is 9, the condition is out of date with respect to the current state of the instance.'),
  reason: z.string().optional().describe(
    "reason contains a programmatic identifier indicating the reason for the condition's last transition. Producers of specific condition types may define expected values and meanings for this field, and whether the values are considered a guaranteed API. The value should be a CamelCase string. This field may not be empty."),
  status: z.string().optional().describe('status of the condition, one of True, False, Unknown.'),
  type: z.string().optional().describe('type of condition in CamelCase or in foo.example.com/CamelCase.'),
}).meta({ required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] });
kubeRegistry.add(Condition, {
  id: metaV1('Condition'),
  description: 'Condition contains details for one aspect of the current state of this API Resource.',
});

/** A `conditions` field as upstream types declare it: a list-map keyed by type, merged by type in patches. */
export const conditionList = (description: string) => z.array(Condition).meta({
  description,
  'x-kubernetes-list-map-keys': ['type'],
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-patch-merge-key': 'type',
  'x-kubernetes-patch-strategy': 'merge',
});
