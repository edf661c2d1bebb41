// From the --audit-* flags to a policy evaluator and a log, as k8s.io/apiserver
// pkg/server/options/audit.go ApplyTo does: the policy is validated whenever it is given; without
// a policy nothing is recorded ("No audit policy file provided…", audit.go:291-295); a log path
// that cannot be created fails start-up (ensureLogFile).
import type { FastifyBaseLogger } from 'fastify';
import { policyRuleEvaluator } from './checker.js';
import { loadPolicyFile } from './policy.js';
import type { Auditing } from './requestAudit.js';
import { openAuditLog } from './sink.js';

export interface AuditOptions {
  policyFile?: string;
  logPath?: string;
  logMaxAgeDays: number;
  logMaxBackups: number;
  logMaxSizeMB: number;
}

export type { Auditing } from './requestAudit.js';

export async function openAuditing(opts: AuditOptions, log: FastifyBaseLogger): Promise<Auditing | undefined> {
  const loaded = opts.policyFile ? await loadPolicyFile(opts.policyFile) : undefined;
  for (const w of loaded?.warnings ?? []) log.warn(`audit policy contains errors, falling back to lenient decoding: ${w}`);
  if (!opts.logPath) {
    if (loaded) log.warn('--audit-policy-file is set but --audit-log-path is not: no audit events are written');
    return undefined;
  }
  if (!loaded) {
    log.info('No audit policy file provided, no events will be recorded for log backend');
    return undefined;
  }
  const sink = openAuditLog({ path: opts.logPath, maxSizeMB: opts.logMaxSizeMB, maxBackups: opts.logMaxBackups, maxAgeDays: opts.logMaxAgeDays }, log);
  log.info({ path: opts.logPath, rules: loaded.policy.rules.length }, 'audit log enabled');
  return { evaluator: policyRuleEvaluator(loaded.policy), sink };
}
