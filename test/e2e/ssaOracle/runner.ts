// Runs a sequence of steps against the oracle and the target under test, step by step (the two
// targets concurrently), and reports the first place their answers differ, with both answers in full.
import { compareAnswers, normalise, type Answer, type Mismatch } from './normalise.js';
import { describeStep, runStep, type Exchange, type Step, type Target } from './steps.js';

export interface Sequence { steps: Step[] }

export interface Difference {
  name: string;
  /** index of the step (steps.length = the final read-back) */
  stepIndex: number;
  step: Step | 'final GET';
  /** which request of the step (a PUT reads first) */
  request: string;
  where: Mismatch;
  oracle: Answer;
  tested: Answer;
  report: string;
}

const FINAL: Step = { op: 'get' };

function describeExchange(x: Exchange): string {
  const hdrs = Object.entries(x.headers).map(([k, v]) => `${k}: ${v}`).join('; ');
  return `${x.method} ${x.path}${hdrs ? `  [${hdrs}]` : ''}${x.body !== undefined ? `\n      body: ${x.body.replace(/\n/g, '\n            ')}` : ''}`;
}

/**
 * A DELETE that removed the object: a CRD answers `Status Success` (its store does not return the
 * deleted object), built-in resources and we answer the object. That is the registry's choice, not
 * SSA's; the final read-back still compares what the delete left.
 */
function crdDeleteStatus(oracle: Answer, tested: Answer): boolean {
  const o = oracle.body as { kind?: unknown; status?: unknown };
  const t = tested.body as { kind?: unknown };
  return oracle.status === 200 && tested.status === 200 && o?.kind === 'Status' && o.status === 'Success' && t?.kind === 'Llama';
}

/**
 * The Warning headers (a repeated key's findings under Warn), in order, of a write that succeeded.
 * Known difference: kube-apiserver's recorder also writes the warnings of a write that then fails
 * (e.g. 422 for a missing spec); we send them with a success only.
 */
function compareWarnings(o: Exchange, t: Exchange): Mismatch | undefined {
  if (o.res.status >= 300 || t.res.status >= 300) return undefined;
  const of = (x: Exchange) => [x.res.headers.warning ?? []].flat();
  const [wo, wt] = [of(o), of(t)];
  return JSON.stringify(wo) === JSON.stringify(wt) ? undefined : { path: 'headers.warning', oracle: wo, tested: wt };
}

/** Runs `seq` on object `name` in both targets; the first difference, or undefined when all answers agree. */
export async function runSequence(seq: Sequence, oracle: Target, tested: Target, ns: string, name: string): Promise<Difference | undefined> {
  const all = [...seq.steps, FINAL];
  for (let i = 0; i < all.length; i++) {
    const step = all[i];
    const [xo, xt] = await Promise.all([runStep(step, oracle, ns, name), runStep(step, tested, ns, name)]);
    for (let r = 0; r < Math.max(xo.length, xt.length); r++) {
      if (!xo[r] || !xt[r]) throw new Error(`step ${i} made ${xo.length} requests on ${oracle.label} but ${xt.length} on ${tested.label}`);
      const a = normalise(xo[r].res, oracle.group);
      const b = normalise(xt[r].res, tested.group);
      if (xo[r].method === 'DELETE' && crdDeleteStatus(a, b)) continue;
      const where = compareAnswers(a, b) ?? (step.op === 'apply' && step.repeatedKey ? compareWarnings(xo[r], xt[r]) : undefined);
      if (where === undefined) continue;
      const stepLabel = i < seq.steps.length ? `step ${i + 1}/${seq.steps.length}` : 'final read-back';
      const report = [
        `object ${ns}/${name}: ${stepLabel}, request ${r + 1}/${xo.length}: answers differ at ${where.path} `
          + `(${oracle.label}: ${JSON.stringify(where.oracle) ?? 'absent'}; ${tested.label}: ${JSON.stringify(where.tested) ?? 'absent'})`,
        `  step: ${describeStep(step)}`,
        `  ${oracle.label} request: ${describeExchange(xo[r])}`,
        `  ${tested.label} request: ${describeExchange(xt[r])}`,
        `  ${oracle.label} answered (normalised): ${a.status} ${JSON.stringify(a.body, null, 1).replace(/\n\s*/g, ' ')}`,
        `  ${tested.label} answered (normalised): ${b.status} ${JSON.stringify(b.body, null, 1).replace(/\n\s*/g, ' ')}`,
        `  steps before: ${seq.steps.slice(0, Math.min(i, seq.steps.length)).map(describeStep).join('\n                ') || '(none)'}`,
      ].join('\n');
      return { name, stepIndex: i, step: i < seq.steps.length ? step : 'final GET', request: `${xo[r].method}`, where, oracle: a, tested: b, report };
    }
  }
  return undefined;
}

/** The shape of a value in a class name: absent, {}, [], {…}, […], or its JSON type. */
function shape(v: unknown): string {
  if (v === undefined) return 'absent';
  if (Array.isArray(v)) return v.length ? '[…]' : '[]';
  if (typeof v === 'object' && v !== null) return Object.keys(v).length ? '{…}' : '{}';
  return v === null ? 'null' : typeof v;
}

/** A coarse class of a difference, for a survey: the kind of step, the request, where (indices folded) and the values' shapes. */
export function differenceClass(d: Difference): string {
  const s = d.step;
  const long = (m: string | undefined) => (m !== undefined && m.length > 128 ? '(long fieldManager)' : '');
  const what = s === 'final GET' ? 'final GET'
    : s.op === 'apply' ? `apply${s.sub === 'status' ? '/status' : ''}${s.manager === undefined ? '(no fieldManager)' : long(s.manager)}${s.wrongType ? `(wrong ${s.wrongType})` : ''}${s.unknownField ? '(unknown field)' : ''}${s.repeatedKey ? '(repeated key)' : ''}${s.dryRun ? '(dryRun)' : ''}`
      : s.op === 'update' || s.op === 'merge' || s.op === 'json' ? `${s.op}${s.sub === 'status' ? '/status' : ''}${s.w.force ? '(force)' : ''}${long(s.w.fieldManager)}`
        : s.op === 'create' ? `create${long(s.w.fieldManager)}` : s.op;
  if (d.where.path === 'status') return `${what} ${d.request}: status ${d.oracle.status} vs ${d.tested.status}`;
  const where = d.where.path.replace(/\[\d+\]/g, '[]').replace(/(fieldsV1)\..*$/, '$1.*');
  return `${what} ${d.request}: ${where} (oracle ${shape(d.where.oracle)}, tested ${shape(d.where.tested)})`;
}
