// audit.k8s.io/v1 as k8s.io/apiserver pkg/apis/audit/v1/types.go defines it: levels, stages, the
// Policy a --audit-policy-file holds and the Event written per stage (fields in the Go struct's
// order, so our JSON lines read like kube-apiserver's).

export const LEVELS = ['None', 'Metadata', 'Request', 'RequestResponse'] as const;
export type Level = (typeof LEVELS)[number];
export const STAGES = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'] as const;
export type Stage = (typeof STAGES)[number];

/** Level.Less (types.go:35-49 orders them None < Metadata < Request < RequestResponse). */
export function levelAtLeast(level: Level, min: Level): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(min);
}

export interface GroupResources { group?: string; resources?: string[]; resourceNames?: string[] }

export interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

/** What a rule decides for one request (pkg/audit/types.go RequestAuditConfig). */
export interface RequestAuditConfig {
  level: Level;
  omitStages: readonly Stage[];
  omitManagedFields: boolean;
}

/** authentication.k8s.io/v1 UserInfo: every field omitempty. */
export interface AuditUser { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }

export interface ObjectReference {
  resource?: string; namespace?: string; name?: string; uid?: string;
  apiGroup?: string; apiVersion?: string; resourceVersion?: string; subresource?: string;
}

/** metav1.Status as an Event carries it: "metadata" always, the rest omitempty. */
export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string; message?: string; reason?: string; details?: unknown; code?: number;
}

/** A JSON text embedded as is (runtime.Unknown's raw bytes): request and response objects. */
export interface RawJson { readonly json: string }

export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: RawJson;
  responseObject?: RawJson;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

const EVENT_KEYS: readonly (keyof AuditEvent)[] = [
  'kind', 'apiVersion', 'level', 'auditID', 'stage', 'requestURI', 'verb', 'user', 'impersonatedUser',
  'sourceIPs', 'userAgent', 'objectRef', 'responseStatus', 'requestObject', 'responseObject',
  'requestReceivedTimestamp', 'stageTimestamp', 'annotations',
];

/** One JSON line (plugin/pkg/audit/log/backend.go, format json), objects spliced in unparsed. */
export function eventLine(ev: AuditEvent): string {
  const parts: string[] = [];
  for (const key of EVENT_KEYS) {
    const v = ev[key];
    if (v === undefined) continue;
    const text = key === 'requestObject' || key === 'responseObject' ? (v as RawJson).json : JSON.stringify(v);
    parts.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${parts.join(',')}}\n`;
}
