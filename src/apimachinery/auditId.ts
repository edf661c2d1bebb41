// audit.GetAuditIDTruncated (k8s.io/apiserver pkg/audit/context.go): the Audit-ID as logs and traces
// carry it. A caller may send any Audit-ID; the audit event keeps it whole, but a line per log call
// and an attribute per span keep only its first 64 characters, so a 16 KiB header costs 64 bytes there.
const MAX_AUDIT_ID_LENGTH = 64;

export const truncatedAuditId = (id: string): string => (id.length > MAX_AUDIT_ID_LENGTH ? id.slice(0, MAX_AUDIT_ID_LENGTH) : id);
