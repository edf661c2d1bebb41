// One request's audit: the Event as k8s.io/apiserver builds it (pkg/audit/request.go) and the
// stages WithAudit writes (pkg/endpoints/filters/audit.go:42-117): RequestReceived once the caller
// is authenticated, ResponseStarted when a long-running request's headers go out, ResponseComplete
// when the response ends, Panic instead when the handler failed unexpectedly; a failed
// authentication writes one ResponseStarted (authn_audit.go:34-59).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parse as parseYaml } from 'yaml';
import type { UserInfo } from '../auth/types.js';
import { isLongRunning } from '../filters/longRunning.js';
import type { PolicyRuleEvaluator } from './checker.js';
import { auditUser, microTime, nowMicros, objectMeta, omitManagedFields, sourceIPs, statusOf, userAgent } from './eventParts.js';
import type { AuditSink } from './sink.js';
import { levelAtLeast, type AuditEvent, type ObjectReference, type RequestAuditConfig, type ResponseStatus, type Stage } from './types.js';

/** A RequestResponse-level body past this is left out of the event rather than buffered. */
const MAX_CAPTURED_RESPONSE_BYTES = 16 * 1024 * 1024;

export interface Auditing { evaluator: PolicyRuleEvaluator; sink: AuditSink }

/** ObjectReference with Go's field order and omitempty. */
function objectRef(r: ObjectReference): ObjectReference {
  const out: ObjectReference = {};
  for (const k of ['resource', 'namespace', 'name', 'uid', 'apiGroup', 'apiVersion', 'resourceVersion', 'subresource'] as const) {
    if (r[k]) out[k] = r[k];
  }
  return out;
}

/** getAuthMethods (authn_audit.go:61-87). */
function authMethods(req: FastifyRequest): string {
  const methods: string[] = [];
  const auth = (req.headers.authorization ?? '').trim();
  const scheme = auth.split(' ');
  if (scheme[0]?.toLowerCase() === 'basic' && scheme.length > 1) methods.push('basic');
  if (scheme.length > 1 && scheme[0]!.toLowerCase() === 'bearer') methods.push('bearer');
  const q = req.raw.url?.indexOf('?') ?? -1;
  if (q >= 0 && new URLSearchParams(req.raw.url!.slice(q + 1)).get('access_token')?.trim()) methods.push('access_token');
  try {
    const socket = req.raw.socket as unknown as { getPeerCertificate?: () => { raw?: Buffer } };
    if (socket.getPeerCertificate?.()?.raw) methods.push('x509');
  } catch { /* not TLS */ }
  return methods.length ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}

export class RequestAudit {
  private config: RequestAuditConfig | undefined;
  private event: AuditEvent | undefined;
  private authenticated: UserInfo | undefined;
  private failedAuthentication = false;
  private longRunning = false;
  private codeSeen = false;
  private ended = false;
  private panic: string | undefined;
  private chunks: Buffer[] | undefined;
  private chunkBytes = 0;

  constructor(readonly auditID: string, readonly receivedMicros: number, private readonly reply: FastifyReply, private readonly auditing: Auditing | undefined) {}

  get enabled(): boolean { return this.event !== undefined; }

  /** After authentication (WithAudit sits right behind WithAuthentication): policy, event, RequestReceived. */
  begin(req: FastifyRequest, user: UserInfo | undefined): void {
    if (!this.auditing || this.config) return;
    const info = req.info;
    this.config = this.auditing.evaluator.evaluate({ user, info });
    if (this.config.level === 'None') return;
    this.authenticated = user;
    this.failedAuthentication = user === undefined;
    this.longRunning = isLongRunning(info);
    const ev: AuditEvent = {
      kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: this.config.level, auditID: this.auditID, stage: 'RequestReceived',
      requestURI: req.raw.url ?? '', verb: info.verb, user: auditUser(user), sourceIPs: sourceIPs(req),
      requestReceivedTimestamp: microTime(this.receivedMicros), stageTimestamp: '',
    };
    const ua = userAgent(req);
    if (ua) ev.userAgent = ua;
    if (info.isResourceRequest) {
      ev.objectRef = objectRef({ namespace: info.namespace, name: info.name, resource: info.resource, subresource: info.subresource, apiGroup: info.apiGroup, apiVersion: info.apiVersion });
    }
    this.event = ev;
    if (this.failedAuthentication) ev.responseStatus = { metadata: {}, message: authMethods(req) };
    else this.emit(req, 'RequestReceived');
    this.watchResponse(req, this.reply);
  }

  annotate(key: string, value: string): void {
    if (!this.event) return;
    (this.event.annotations ??= {})[key] = value;
  }

  /** LogRequestObject / LogRequestPatch, from the decoded body. */
  requestBody(req: FastifyRequest, body: unknown): void {
    const ev = this.event;
    if (!ev || body === undefined || !req.info.isResourceRequest) return;
    const patch = req.info.verb === 'patch';
    if (!patch && ev.objectRef) {
      const m = objectMeta(body);
      const ref = ev.objectRef;
      ev.objectRef = objectRef({ ...ref, namespace: ref.namespace || m.namespace, name: ref.name || m.name, uid: ref.uid || m.uid, resourceVersion: ref.resourceVersion || m.resourceVersion });
    }
    if (!levelAtLeast(ev.level, 'Request')) return;
    // Serialized now: handlers may change the decoded object afterwards.
    ev.requestObject = { json: JSON.stringify(!patch && this.config!.omitManagedFields ? omitManagedFields(body) : body) };
  }

  /** LogResponseObject for a Status: its bounded fields become responseStatus. */
  responseStatus(status: ResponseStatus): void {
    if (this.event) this.event.responseStatus = status;
  }

  /** An unexpected exception: Go's handler panic. */
  panicked(message: string): void {
    this.panic = message;
  }

  private watchResponse(req: FastifyRequest, reply: FastifyReply): void {
    const res = reply.raw as unknown as Record<'writeHead' | 'write' | 'end', (...args: unknown[]) => unknown>;
    const writeHead = res.writeHead;
    res.writeHead = (...args: unknown[]) => {
      this.onCode(req, args[0] as number);
      return writeHead.apply(reply.raw, args);
    };
    const capture = !this.failedAuthentication && !this.longRunning && levelAtLeast(this.event!.level, 'RequestResponse');
    if (capture) {
      this.chunks = [];
      const write = res.write;
      const end = res.end;
      // HTTP/2's end() writes its chunk through write(): count it once.
      let ending = false;
      res.write = (...args: unknown[]) => { if (!ending) this.capture(args[0], args[1]); return write.apply(reply.raw, args); };
      res.end = (...args: unknown[]) => {
        if (typeof args[0] !== 'function') this.capture(args[0], args[1]);
        ending = true;
        try { return end.apply(reply.raw, args); } finally { ending = false; }
      };
    }
    reply.raw.once('close', () => this.finish(req, reply));
  }

  private capture(chunk: unknown, encoding: unknown): void {
    if (!this.chunks || chunk === undefined || chunk === null) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8')
      : chunk instanceof Uint8Array ? Buffer.from(chunk) : undefined;
    if (!buf) return;
    this.chunkBytes += buf.length;
    if (this.chunkBytes > MAX_CAPTURED_RESPONSE_BYTES) { this.chunks = undefined; return; }
    this.chunks.push(buf);
  }

  /** auditResponseWriter.processCode (audit.go:231-243). */
  private onCode(req: FastifyRequest, code: number): void {
    const ev = this.event;
    if (!ev || this.codeSeen) return;
    this.codeSeen = true;
    ev.responseStatus = { ...(ev.responseStatus ?? { metadata: {} }), code };
    if (this.longRunning || this.failedAuthentication) this.emit(req, 'ResponseStarted');
  }

  private finish(req: FastifyRequest, reply: FastifyReply): void {
    const ev = this.event;
    if (!ev || this.ended) return;
    this.ended = true;
    if (this.failedAuthentication) return;
    if (this.panic !== undefined) {
      ev.responseStatus = { metadata: {}, status: 'Failure', message: `APIServer panic'd: ${this.panic}`, reason: 'InternalError', code: 500 };
      this.emit(req, 'Panic');
      return;
    }
    const faked: ResponseStatus = { metadata: {}, status: 'Success', message: 'Connection closed early', code: 200 };
    if (!ev.responseStatus && this.longRunning) {
      ev.responseStatus = faked;
      this.emit(req, 'ResponseStarted');
    }
    ev.responseStatus ??= faked;
    this.responseObject(reply);
    this.emit(req, 'ResponseComplete');
  }

  /** The captured JSON or YAML body, re-encoded as JSON (encodeObject writes JSON whatever was served). */
  private responseObject(reply: FastifyReply): void {
    const chunks = this.chunks;
    this.chunks = undefined;
    if (!chunks?.length || !this.event) return;
    const type = String(reply.raw.getHeader('content-type') ?? '').toLowerCase();
    const encoded = reply.raw.getHeader('content-encoding');
    if (encoded && encoded !== 'identity') return;
    try {
      const text = Buffer.concat(chunks).toString('utf8');
      const body: unknown = type.startsWith('application/json') ? JSON.parse(text) : type.startsWith('application/yaml') ? parseYaml(text) : undefined;
      if (body === undefined) return;
      this.event.responseObject = { json: JSON.stringify(this.config!.omitManagedFields ? omitManagedFields(body) : body) };
    } catch { /* not an object we can record */ }
  }

  /** processAuditEvent (audit.go:180-199). */
  private emit(req: FastifyRequest, stage: Stage): void {
    const ev = this.event!;
    if (this.config!.omitStages.includes(stage)) return;
    ev.stage = stage;
    ev.stageTimestamp = stage === 'RequestReceived' ? ev.requestReceivedTimestamp : microTime(nowMicros());
    // WithImpersonation records the user the request runs as (request.go:85-99).
    if (this.authenticated && req.user && req.user !== this.authenticated) ev.impersonatedUser = auditUser(req.user);
    this.auditing!.sink.write(ev);
  }
}

export { statusOf };
