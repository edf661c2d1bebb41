// The pieces of an Event taken from the request, as k8s.io/apiserver pkg/audit/request.go
// LogRequestMetadata and apimachinery's utilnet.SourceIPs build them.
import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { headersDistinct } from '../../endpoints/protocol.js';
import type { AuditUser, ResponseStatus } from './types.js';

// --- time: metav1.MicroTime, RFC3339 with microseconds in UTC ---------------------------------

let anchorMs = Date.now() - performance.now();
let anchoredAt = performance.now();

/** Wall-clock microseconds; sub-millisecond from the monotonic clock, re-anchored every 10 s. */
export function nowMicros(): number {
  const p = performance.now();
  if (p - anchoredAt > 10_000) { anchorMs = Date.now() - p; anchoredAt = p; }
  return Math.floor((anchorMs + p) * 1000);
}

export function microTime(us: number): string {
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, 19)}.${String(us - Math.floor(us / 1_000_000) * 1_000_000).padStart(6, '0')}Z`;
}

// --- sourceIPs ---------------------------------------------------------------------------------

/** net.IP.String(): IPv6 compressed lower case, IPv4-mapped addresses as IPv4. */
function canonicalIP(s: string): string | undefined {
  const kind = isIP(s);
  if (kind === 4) return s;
  if (kind !== 6) return undefined;
  const v6 = new URL(`http://[${s}]`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (!mapped) return v6;
  const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** utilnet.SourceIPs (apimachinery pkg/util/net/http.go:304-350): X-Forwarded-For, X-Real-Ip, then the peer. */
export function sourceIPs(req: FastifyRequest): string[] {
  const h = headersDistinct(req.raw as Parameters<typeof headersDistinct>[0]);
  const ips: string[] = [];
  const forwarded = h['x-forwarded-for']?.[0] ?? '';
  for (const part of forwarded ? forwarded.split(',') : []) {
    const ip = canonicalIP(part.trim());
    if (ip) ips.push(ip);
  }
  const realIp = canonicalIP(h['x-real-ip']?.[0] ?? '');
  if (realIp && !ips.includes(realIp)) ips.push(realIp);
  const remote = canonicalIP(req.raw.socket?.remoteAddress ?? '');
  if (remote && ips[ips.length - 1] !== remote) ips.push(remote);
  return ips;
}

// --- user agent, user --------------------------------------------------------------------------

const MAX_USER_AGENT_BYTES = 1024;

/** maybeTruncateUserAgent (request.go:236-243). */
export function userAgent(req: FastifyRequest): string | undefined {
  const ua = headersDistinct(req.raw as Parameters<typeof headersDistinct>[0])['user-agent']?.[0];
  if (!ua) return undefined;
  const bytes = Buffer.from(ua, 'utf8');
  return bytes.length > MAX_USER_AGENT_BYTES ? `${bytes.subarray(0, MAX_USER_AGENT_BYTES).toString('utf8')}...TRUNCATED` : ua;
}

/** authnv1.UserInfo: empty fields are left out (omitempty). */
export function auditUser(u: { username: string; uid?: string; groups: readonly string[]; extra: Record<string, readonly string[]> } | undefined): AuditUser {
  if (!u) return {};
  const out: AuditUser = {};
  if (u.username) out.username = u.username;
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = [...u.groups];
  const extra = Object.entries(u.extra);
  if (extra.length) out.extra = Object.fromEntries(extra.map(([k, v]) => [k, [...v]]));
  return out;
}

// --- objects -----------------------------------------------------------------------------------

type JsonObject = Record<string, unknown>;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function withoutManagedFields(obj: unknown): unknown {
  if (!isObject(obj) || !isObject(obj.metadata) || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** copyWithoutManagedFields (request.go:252-290): the object, each list item, each Table row's object; never mutates. */
export function omitManagedFields(obj: unknown): unknown {
  if (!isObject(obj)) return obj;
  let out = withoutManagedFields(obj) as JsonObject;
  if (Array.isArray(out.items)) out = { ...out, items: out.items.map(withoutManagedFields) };
  if (out.kind === 'Table' && Array.isArray(out.rows)) {
    out = { ...out, rows: out.rows.map((r: unknown) => (isObject(r) && r.object !== undefined ? { ...r, object: withoutManagedFields(r.object) } : r)) };
  }
  return out;
}

/** LogResponseObject's copy of a Status: only its bounded fields (request.go:184-193). */
export function statusOf(body: unknown): ResponseStatus | undefined {
  if (!isObject(body) || body.kind !== 'Status') return undefined;
  const s: ResponseStatus = { metadata: {} };
  if (typeof body.status === 'string' && body.status) s.status = body.status;
  if (typeof body.message === 'string' && body.message) s.message = body.message;
  if (typeof body.reason === 'string' && body.reason) s.reason = body.reason;
  if (body.details !== undefined && body.details !== null) s.details = body.details;
  if (typeof body.code === 'number' && body.code) s.code = body.code;
  return s;
}

/** The metadata LogRequestObject copies into objectRef when the URL did not name it. */
export function objectMeta(obj: unknown): { namespace?: string; name?: string; uid?: string; resourceVersion?: string } {
  if (!isObject(obj) || !isObject(obj.metadata)) return {};
  const m = obj.metadata;
  const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);
  return { namespace: str(m.namespace), name: str(m.name), uid: str(m.uid), resourceVersion: str(m.resourceVersion) };
}
