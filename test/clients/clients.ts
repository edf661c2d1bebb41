// Runs the third-party client programs of test/clients/ (the official Python `kubernetes` client and
// k8s.io/client-go v0.33) against a kubeconfig and turns their JSON lines into one node:test test per
// step. Installing them is the setup scripts' job (cached under .cache/); if Python, Go or a
// dependency is missing those scripts fail, and so do the tests: they never skip.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');

/** One line printed by a client program. */
export interface ClientStep {
  client: string;
  step: string;
  ok: boolean;
  detail?: Record<string, unknown>;
  error?: string;
  /** Python: the status and body of the server's error response */
  status?: number;
  body?: string;
  /** The requests the step made (method, path, query, Content-Type, status, error body) */
  requests?: unknown[];
}

export interface ClientRun { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; steps: ClientStep[] }

/** Every step each program must report, in order (a program that skips one fails the test). */
export const PYTHON_STEPS = ['list', 'watch', 'create', 'watch-added', 'get', 'replace', 'watch-modified', 'replace-stale-conflict',
  'list-contains', 'delete', 'watch-deleted', 'get-after-delete', 'dynamic-discovery'] as const;
export const CLIENTGO_STEPS = ['list', 'watch', 'create', 'watch-added', 'get', 'replace', 'watch-modified', 'replace-stale-conflict',
  'list-contains', 'watchlist-list', 'watchlist-informer', 'delete', 'watch-deleted', 'get-after-delete'] as const;

interface Exec { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

function exec(cmd: string, args: string[], opts: { timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<Exec> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); rej(e); });
    child.on('close', (code, signal) => { clearTimeout(timer); res({ code, signal, stdout, stderr }); });
  });
}

const tail = (s: string, n: number) => s.trimEnd().split('\n').slice(-n).join('\n');

/** Runs an install/build script that prints the installed path as its last stdout line. */
async function ensure(script: string, timeoutMs: number): Promise<string> {
  const r = await exec('bash', [join(HERE, script)], { timeoutMs });
  const path = r.stdout.trim().split('\n').pop() ?? '';
  if (r.code !== 0 || !path) {
    throw new Error(`test/clients/${script} failed (exit ${r.code ?? r.signal}); the client tests cannot run:\n${tail(r.stderr, 40)}`);
  }
  return path;
}

/** The venv's python with the pinned `kubernetes` package (test/clients/python/setup.sh). */
export const ensurePythonClient = () => ensure('python/setup.sh', 5 * 60_000);
/** The client-go check binary (test/clients/clientgo/build.sh; minutes when cold). */
export const ensureClientGo = () => ensure('clientgo/build.sh', 10 * 60_000);
/** The kube-rs follower binary (test/clients/kubers/build.sh; about a minute cold here, longer on a busy machine). */
export const ensureKubeRs = () => ensure('kubers/build.sh', 15 * 60_000);

function parseSteps(stdout: string): ClientStep[] {
  return stdout.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l) as ClientStep);
}

async function runCheck(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<ClientRun> {
  const r = await exec(cmd, args, { timeoutMs: 120_000, env });
  return { ...r, steps: parseSteps(r.stdout) };
}

export function runPythonCheck(python: string, kubeconfig: string, namespace: string): Promise<ClientRun> {
  return runCheck(python, [join(HERE, 'python/check.py'), kubeconfig, namespace], { ...process.env, PYTHONUNBUFFERED: '1' });
}

export function runClientGoCheck(bin: string, kubeconfig: string, namespace: string): Promise<ClientRun> {
  return runCheck(bin, ['-kubeconfig', kubeconfig, '-namespace', namespace, '-timeout', '100s'],
    { ...process.env, KUBE_FEATURE_WatchListClient: 'true' });
}

/** A failed step as the assertion message: the error, the server's answer and the requests made. */
function explain(s: ClientStep | undefined, run: ClientRun): string {
  if (!s) return `step missing from the program's output (exit ${run.code ?? run.signal}); stdout:\n${tail(run.stdout, 30)}\nstderr:\n${tail(run.stderr, 30)}`;
  return [`${s.client} ${s.step}: ${s.error ?? '(no error text)'}`,
    s.body !== undefined ? `server answered ${s.status}: ${s.body}` : '',
    s.requests?.length ? `requests:\n${s.requests.map((r) => `  ${JSON.stringify(r)}`).join('\n')}` : '',
    s.detail ? `detail: ${JSON.stringify(s.detail)}` : ''].filter(Boolean).join('\n');
}

/**
 * Registers one test per expected step, plus one for the program's exit status, for a run that
 * `before` (in the calling file) produces. `where` names the target in the test titles.
 */
export function clientStepTests(client: 'python' | 'client-go', where: string, steps: readonly string[], getRun: () => ClientRun,
  extra: Partial<Record<string, (s: ClientStep) => void>> = {}): void {
  for (const name of steps) {
    test(`${client} (${where}): ${name}`, () => {
      const run = getRun();
      const s = run.steps.find((x) => x.step === name);
      assert.ok(s?.ok, explain(s, run));
      extra[name]?.(s);
    });
  }
  test(`${client} (${where}): reports exactly the expected steps and exits 0 only when all passed`, () => {
    const run = getRun();
    assert.deepEqual(run.steps.map((s) => s.step), [...steps], `stdout:\n${run.stdout}\nstderr:\n${tail(run.stderr, 30)}`);
    assert.ok(run.steps.every((s) => s.client === client));
    assert.equal(run.code, run.steps.every((s) => s.ok) ? 0 : 1, `exit ${run.code ?? run.signal}; stderr:\n${tail(run.stderr, 30)}`);
  });
}

/** Checks shared by both targets: what each step exists to exercise. */
export const pythonExtras: Partial<Record<string, (s: ClientStep) => void>> = {
  // The Python client sends custom-object bodies with no Content-Type; the server must read them as JSON.
  create: (s) => assert.equal(s.detail?.requestContentType, null, 'the client sent a Content-Type: the no-Content-Type path is not exercised'),
  replace: (s) => assert.equal(s.detail?.requestContentType, null, 'the client sent a Content-Type: the no-Content-Type path is not exercised'),
};

export const clientGoExtras: Partial<Record<string, (s: ClientStep) => void>> = {
  // Exactly one watch-list request and nothing else: a fallback LIST fails inside the program already.
  'watchlist-list': (s) => assert.equal((s.detail?.requests as unknown[] | undefined)?.length, 1, JSON.stringify(s.detail)),
};
