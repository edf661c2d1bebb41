// llama-controller: a reference operator for farm.example.com Llamas (see README.md).
// Wiring only: options → kubeconfig → informer → work queue → workers running reconcile; a graceful
// stop on SIGTERM/SIGINT (stop watching, let running reconciles finish, flush events, exit 0).
import { KubeConfig } from '@kubernetes/client-node';
import { llamaApi } from './api.js';
import { eventRecorder } from './events.js';
import { llamaInformer } from './informer.js';
import { CONTROLLER_NAME, keyOf } from './llama.js';
import { createLogger } from './log.js';
import { parseOptions, USAGE, type Options } from './options.js';
import { OwnWrites } from './ownWrites.js';
import { WorkQueue } from './queue.js';
import { reconciler } from './reconcile.js';

let opts: Options;
const kc = new KubeConfig();
try {
  const parsed = parseOptions(process.argv.slice(2), process.env);
  if (parsed === 'help') { process.stdout.write(USAGE); process.exit(0); }
  opts = parsed;
  if (opts.inCluster) kc.loadFromCluster(); else if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig); else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error('the kubeconfig names no current cluster');
} catch (e) {
  process.stderr.write(`${CONTROLLER_NAME}: ${(e as Error).message}\n${USAGE}`);
  process.exit(2);
}

const log = createLogger(opts.logLevel, { controller: CONTROLLER_NAME });
// A bug must not end the controller silently: log it (the work queue retries what failed).
process.on('unhandledRejection', (e) => log.error('unhandled rejection', { error: e }));

const api = llamaApi(kc, { namespace: opts.namespace, timeoutMs: opts.requestTimeoutMs });
const events = eventRecorder(kc, log, { timeoutMs: opts.requestTimeoutMs });
const queue = new WorkQueue();
const ownWrites = new OwnWrites();
const informer = llamaInformer(kc, api, {
  upsert(l) { const key = keyOf(l); ownWrites.observed(key, l.metadata.resourceVersion); queue.add(key); },
  remove(l) { const key = keyOf(l); ownWrites.forget(key); queue.add(key); },
}, log);
const reconcile = reconciler({ cache: informer.cache, api, events, ownWrites, log });

async function worker(): Promise<void> {
  for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
    try {
      const r = await reconcile(key);
      queue.forget(key);
      if (r.requeueAfterMs) queue.addAfter(key, r.requeueAfterMs);
    } catch (e) {
      const delayMs = queue.retry(key);
      log.warn('reconcile failed; requeued', { llama: key, error: e, delayMs });
    } finally {
      queue.done(key);
    }
  }
}

let workers: Promise<void>[] = [];
let stopping = false;
async function stop(signal: NodeJS.Signals): Promise<void> {
  if (stopping) { log.warn('second signal: exiting now', { signal }); process.exit(1); }
  stopping = true;
  const deadline = Date.now() + opts.shutdownTimeoutMs;
  log.info('stopping', { signal });
  await informer.stop();
  queue.shutDown();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(workers), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
  clearTimeout(timer);
  await events.flush(Math.max(0, deadline - Date.now()));
  log.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', (s) => void stop(s));
process.on('SIGINT', (s) => void stop(s));

log.info('starting', { server: kc.getCurrentCluster()?.server, user: kc.getCurrentUser()?.name, namespace: opts.namespace ?? '(all)', workers: opts.workers });
await informer.start();
if (!stopping) {
  workers = Array.from({ length: opts.workers }, () => worker());
  log.info('started', { llamas: informer.cache.list().length });
}
