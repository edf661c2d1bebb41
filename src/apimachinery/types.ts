// Wire shapes shared by the machinery (a subset of k8s.io/apimachinery meta/v1).

export interface OwnerReference {
  apiVersion: string; kind: string; name: string; uid: string;
  controller?: boolean; blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string; operation?: 'Apply' | 'Update'; apiVersion?: string; time?: string;
  fieldsType?: string; fieldsV1?: unknown; subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
  [extra: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ListMeta { resourceVersion: string; continue?: string; remainingItemCount?: number }

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** What a request asks for (k8s.io/apiserver's request.RequestInfo); authorization attributes derive from it. */
export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** Raw selectors of a list/watch/deletecollection (AuthorizeWithSelectors passes them to authorization). */
  labelSelector?: string;
  fieldSelector?: string;
}
