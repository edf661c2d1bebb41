// YAML is converted off the event loop: a 3 MiB request body costs up to a second of parsing, hostile
// ones (1M-level nesting, alias bombs) more, and a YAML list of 10,000 objects a second to write.
// A worker thread turns YAML into JSON text under kube's limits (depth 10,000, bounded alias expansion),
// decoded then like any JSON body, and JSON into YAML with sorted keys (as sigs.k8s.io/yaml writes it).
import { createRequire } from 'node:module';
import { dump, type DumpOptions } from 'js-yaml';
import { Worker } from 'node:worker_threads';
import { decodeJsonBody, type DecodedJson } from './jsonBody.js';
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

type Reply = { id: number; text: string } | { id: number; error: string };

// Plain CommonJS run by the worker (eval: no file to locate under tsx or in dist).
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const yaml = require(workerData.jsYaml);
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
    const value = yaml.load(text, { json: true, maxDepth });
    if (expandedSize(value, maxJsonBytes) > maxJsonBytes) throw new Error('document contains excessive aliasing');
    parentPort.postMessage({ id, text: value === undefined ? 'null' : JSON.stringify(value) });
  } catch (e) {
    parentPort.postMessage({ id, error: String(e && e.message || e).split('\\n')[0] });
  }
});
`;

interface Slot { worker: Worker; pending: Map<number, { resolve: (r: Reply) => void; timer: NodeJS.Timeout }> }

export class YamlCodec {
  private slot: Slot | undefined;
  private nextId = 1;

  constructor(private readonly limits: YamlLimits) {}

  async decode(text: string): Promise<DecodedJson> {
    const reply = await this.run('decode', text);
    if ('error' in reply) throw errors.badRequest(`error converting YAML to JSON: yaml: ${reply.error.replace(/^YAMLException: /, '')}`);
    return decodeJsonBody(reply.text);
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
    if (this.slot) this.fail(this.slot, 'the server is shutting down');
  }

  private run(op: 'decode' | 'encode', text: string): Promise<Reply> {
    const slot = this.slot ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      // A document this slow holds the worker: replace it, and the jobs queued behind it fail alike.
      const timer = setTimeout(() => this.fail(slot, `the document could not be decoded within ${this.limits.timeoutMs / 1000}s`), this.limits.timeoutMs);
      slot.pending.set(id, { resolve, timer });
      slot.worker.postMessage({ id, op, text, maxDepth: MAX_NESTING_DEPTH, maxJsonBytes: this.limits.maxJsonBytes });
    });
  }

  private start(): Slot {
    const jsYaml = createRequire(import.meta.url).resolve('js-yaml');
    // 10,000 nested levels need a deeper stack than a worker's default 4 MB.
    const worker = new Worker(workerSource, { eval: true, workerData: { jsYaml, dumpOptions }, resourceLimits: { stackSizeMb: 64, maxOldGenerationSizeMb: 512 } });
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (r: Reply) => {
      const p = slot.pending.get(r.id);
      if (!p) return;
      clearTimeout(p.timer);
      slot.pending.delete(r.id);
      p.resolve(r);
    });
    worker.on('error', (e) => this.fail(slot, e.message));
    worker.on('exit', () => this.fail(slot, 'the YAML decoder stopped'));
    this.slot = slot;
    return slot;
  }

  private fail(slot: Slot, why: string): void {
    if (this.slot === slot) this.slot = undefined;
    void slot.worker.terminate();
    for (const [id, p] of slot.pending) {
      clearTimeout(p.timer);
      p.resolve({ id, error: why });
    }
    slot.pending.clear();
  }
}
