// Where audit events go: kube's log backend (plugin/pkg/audit/log/backend.go, format json, one
// Event per line) on stdout for --audit-log-path=- or a rotated file. Blocking mode ignores write
// errors for the request (options/audit.go:397 ignoreErrorsBackend) but we report them.
import type { FastifyBaseLogger } from 'fastify';
import { eventLine, type AuditEvent } from './types.js';
import { RotatingFile, type Rotation } from './rotatingFile.js';

export interface AuditSink {
  write(ev: AuditEvent): void;
  close(): void;
}

export interface AuditLogOptions extends Rotation {
  /** A file, or "-" for standard output. */
  path: string;
}

/** Opens the log at start-up, so a path that cannot be written fails there (ensureLogFile). */
export function openAuditLog(opts: AuditLogOptions, log: FastifyBaseLogger): AuditSink {
  let failures = 0;
  const failed = (e: unknown) => {
    // One line per 1000 failures: a full disk must not flood the server log too.
    if (failures++ % 1000 === 0) log.error({ err: e, failures }, 'audit event not written');
  };
  if (opts.path === '-') {
    return { write: (ev) => { try { process.stdout.write(eventLine(ev)); } catch (e) { failed(e); } }, close: () => {} };
  }
  const file = new RotatingFile(opts.path, opts);
  file.ensure();
  return { write: (ev) => { try { file.write(eventLine(ev)); } catch (e) { failed(e); } }, close: () => file.close() };
}
