// YAML is converted off the event loop: a 3 MiB request body costs up to a second of parsing, hostile
// ones (1M-level nesting, alias bombs) more, and a YAML list of 10,000 objects a second to write.
// A worker thread turns YAML into JSON text under kube's limits (depth 10,000, bounded alias expansion),
// decoded then like any JSON body, and JSON into YAML with sorted keys (as sigs.k8s.io/yaml writes it).
// Repeated keys are kept last-wins, as goyaml's Unmarshal does, and reported as its UnmarshalStrict does.
import { createRequire } from 'node:module';
import { dump, type DumpOptions } from 'js-yaml';
import { Worker } from 'node:worker_threads';
import { decodeJsonBody, type DecodedJson } from './jsonBody.js';
import { findDuplicateKeys, yamlUnmarshalErrors, type DuplicateKey } from './yamlDuplicates.js';
import { MAX_NESTING_DEPTH } from './jsonValue.js';
import { errors } from './status.js';

export interface YamlLimits {
  /** Alias expansion may make the JSON at most this large (goyaml refuses "excessive aliasing"). */
  maxJsonBytes: number;
  /** A document that takes longer is refused (the worker is replaced). */
  timeoutMs: number;
}

/** sigs.k8s.io/yaml writes map keys sorted; no line folding, no anchors. */
const dumpOptions: DumpOptions = { sortKeys: true, lineWidth: -1, noRefs: true };

type Reply = { id: number; text: string; duplicates?: DuplicateKey[] } | { id: number; error: string };

// Plain CommonJS run by the worker (eval: no file to locate under tsx or in dist).
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const yaml = require(workerData.jsYaml);
const YAML = require(workerData.yamlLib);
// esbuild's keepNames helper (tsx), which the source of findDuplicateKeys may call.
const __name = (f) => f;
const findDuplicateKeys = ${findDuplicateKeys.toString()};
// Expanded JSON size with shared (aliased) nodes counted each time they appear, memoized per node.
function expandedSize(root, limit) {
  const memo = new Map();
  const size = (v) => {
    if (v === null || typeof v !== 'object') return typeof v === 'string' ? v.length + 2 : String(v).length;
    if (memo.has(v)) return memo.get(v);
    memo.set(v, Infinity); // a cycle (an alias inside its own anchor) never ends
    let s = 2;
    if (Array.isArray(v)) for (const x of v) { s += size(x) + 1; if (s > limit) break; }
    else for (const k of Object.keys(v)) { s += k.length + 3 + size(v[k]); if (s > limit) break; }
    memo.set(v, s);
    return s;
  };
  return size(root);
}
parentPort.on('message', ({ id, op, text, maxDepth, maxJsonBytes }) => {
  try {
    if (op === 'encode') {
      parentPort.postMessage({ id, text: yaml.dump(JSON.parse(text), workerData.dumpOptions) });
      return;
    }
    // js-yaml stops at a repeated key unless told to keep the last: only then (or with a merge key,
    // whose overrides it allows and goyaml does not) are the repeated keys looked for.
    let value;
    let repeated = text.includes('<<');
    try {
      value = yaml.load(text, { maxDepth });
    } catch (e) {
      if (!e || e.reason !== 'duplicated mapping key') throw e;
      value = yaml.load(text, { json: true, maxDepth });
      repeated = true;
    }
    if (expandedSize(value, maxJsonBytes) > maxJsonBytes) throw new Error('document contains excessive aliasing');
    const duplicates = repeated ? findDuplicateKeys(text, YAML) : [];
    parentPort.postMessage({ id, text: value === undefined ? 'null' : JSON.stringify(value), duplicates });
  } catch (e) {
    parentPort.postMessage({ id, error: String(e && e.message || e).split('\\n')[0] });
  }
});
`;

interface Job { id: number; op: 'decode' | 'encode'; text: string; resolve: (r: Reply) => void }

/**
 * One job in the worker at a time: the time limit measures that job alone, and when it overruns only
 * it fails — the worker is replaced and the jobs queued behind it run on the new one.
 */
export class YamlCodec {
  private worker: Worker | undefined;
  private running: { job: Job; timer: NodeJS.Timeout } | undefined;
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly limits: YamlLimits) {}

  /** The JSON of the document; its repeated keys as one strict decoding error (yaml.YAMLToJSONStrict's). */
  async decode(text: string): Promise<DecodedJson> {
    const reply = await this.run('decode', text);
    if ('error' in reply) throw errors.badRequest(`error converting YAML to JSON: yaml: ${reply.error.replace(/^YAMLException: /, '')}`);
    const decoded = decodeJsonBody(reply.text);
    return reply.duplicates?.length ? { ...decoded, duplicateFields: [yamlUnmarshalErrors(reply.duplicates)] } : decoded;
  }

  /**
   * YAML of a JSON text the server made (a response body, maybe of a committed write: this must not
   * fail, so if the worker cannot do it, this thread does).
   */
  async encode(json: string): Promise<string> {
    const reply = await this.run('encode', json);
    return 'error' in reply ? dump(JSON.parse(json), dumpOptions) : reply.text;
  }

  close(): void {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve({ id: job.id, error: 'the server is shutting down' });
    if (this.running) this.finish(this.running.job.id, { id: this.running.job.id, error: 'the server is shutting down' });
    void this.worker?.terminate();
    this.worker = undefined;
  }

  private run(op: 'decode' | 'encode', text: string): Promise<Reply> {
    if (this.closed) return Promise.resolve({ id: 0, error: 'the server is shutting down' });
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, op, text, resolve });
      this.pump();
    });
  }

  private pump(): void {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    const worker = this.worker ?? this.start();
    const timer = setTimeout(() => {
      // This document holds the worker: replace the worker, fail only this job.
      if (this.worker === worker) this.worker = undefined;
      void worker.terminate();
      this.finish(job.id, { id: job.id, error: `the document could not be converted within ${this.limits.timeoutMs / 1000}s` });
    }, this.limits.timeoutMs);
    this.running = { job, timer };
    worker.postMessage({ id: job.id, op: job.op, text: job.text, maxDepth: MAX_NESTING_DEPTH, maxJsonBytes: this.limits.maxJsonBytes });
  }

  private finish(id: number, reply: Reply): void {
    if (this.running?.job.id !== id) return;
    clearTimeout(this.running.timer);
    const { job } = this.running;
    this.running = undefined;
    job.resolve(reply);
    this.pump();
  }

  private start(): Worker {
    const require = createRequire(import.meta.url);
    const jsYaml = require.resolve('js-yaml');
    const yamlLib = require.resolve('yaml');
    // 10,000 nested levels need a deeper stack than a worker's default 4 MB.
    const worker = new Worker(workerSource, { eval: true, workerData: { jsYaml, yamlLib, dumpOptions }, resourceLimits: { stackSizeMb: 64, maxOldGenerationSizeMb: 512 } });
    worker.unref();
    worker.on('message', (r: Reply) => this.finish(r.id, r));
    // A worker that dies (out of memory, a crash) fails the job it held; the next job starts a new one.
    const died = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      if (this.running) this.finish(this.running.job.id, { id: this.running.job.id, error: why });
    };
    worker.on('error', (e) => died(e.message));
    worker.on('exit', () => died('the YAML converter stopped'));
    this.worker = worker;
    return worker;
  }
}
