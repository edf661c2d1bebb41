// Core Events about llamas (what `kubectl describe llama` lists under Events), written as client-go's
// EventRecorder does: in the background, never blocking a reconcile; a repeat of the same event
// (same llama, type, reason, message) PATCHes count and lastTimestamp instead of creating another.
// Failed writes are retried a few times, then dropped with a log line (events are best-effort).
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type CoreV1Event } from '@kubernetes/client-node';
import { hostname } from 'node:os';
import { httpCode, requestTimeout } from './api.js';
import { exponentialBackoff, sleep } from './backoff.js';
import { API_VERSION, CONTROLLER_NAME, KIND, type Llama } from './llama.js';
import type { Logger } from './log.js';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  record(l: Llama, type: EventType, reason: string, message: string): void;
  /** Waits (at most timeoutMs) for the events recorded so far to be written. */
  flush(timeoutMs: number): Promise<void>;
}

interface Sent { name: string; namespace: string; count: number }

const MAX_PENDING = 1000;
const MAX_REMEMBERED = 4096;
const ATTEMPTS = 4;

export function eventRecorder(kc: KubeConfig, log: Logger, opts: { timeoutMs: number }): EventRecorder {
  const core = kc.makeApiClient(CoreV1Api);
  const deadline = requestTimeout(opts.timeoutMs);
  const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch, deadline);
  const instance = `${CONTROLLER_NAME}-${hostname()}`.slice(0, 128);
  /** Events already written, for counting repeats (insertion-ordered: the oldest is dropped first). */
  const sent = new Map<string, Sent>();
  let chain: Promise<void> = Promise.resolve();
  let pending = 0;
  let seq = 0;

  const write = async (l: Llama, type: EventType, reason: string, message: string, at: Date) => {
    const key = [l.metadata.uid, type, reason, message].join('\u0000');
    const prev = sent.get(key);
    if (prev) {
      try {
        await core.patchNamespacedEvent({
          name: prev.name, namespace: prev.namespace,
          body: [{ op: 'replace', path: '/count', value: prev.count + 1 }, { op: 'replace', path: '/lastTimestamp', value: at.toISOString() }],
        }, jsonPatch);
        prev.count++;
        return;
      } catch (e) {
        if (httpCode(e) !== 404) throw e;
        sent.delete(key); // it expired (events have a TTL): start a new one
      }
    }
    const namespace = l.metadata.namespace;
    // client-go's name: <object name>.<hex nanoseconds>, here made unique within this process too.
    const name = `${l.metadata.name}.${(BigInt(at.getTime()) * 1_000_000n + BigInt(seq++ % 1_000_000)).toString(16)}`;
    const event: CoreV1Event = {
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: API_VERSION, kind: KIND, name: l.metadata.name, namespace,
        uid: l.metadata.uid, resourceVersion: l.metadata.resourceVersion,
      },
      type, reason, message,
      source: { component: CONTROLLER_NAME },
      reportingComponent: CONTROLLER_NAME,
      reportingInstance: instance,
      firstTimestamp: at, lastTimestamp: at, count: 1,
    };
    await core.createNamespacedEvent({ namespace, body: event }, deadline);
    sent.set(key, { name, namespace, count: 1 });
    if (sent.size > MAX_REMEMBERED) sent.delete(sent.keys().next().value!);
  };

  const writeWithRetries = async (l: Llama, type: EventType, reason: string, message: string, at: Date) => {
    const backoff = exponentialBackoff(250, 4000);
    for (let attempt = 1; ; attempt++) {
      try {
        await write(l, type, reason, message, at);
        log.debug('event recorded', { llama: `${l.metadata.namespace}/${l.metadata.name}`, reason });
        return;
      } catch (e) {
        if (attempt >= ATTEMPTS) {
          log.error('event dropped', { llama: `${l.metadata.namespace}/${l.metadata.name}`, reason, error: e, attempts: attempt });
          return;
        }
        await sleep(backoff.next());
      }
    }
  };

  return {
    record(l, type, reason, message) {
      if (pending >= MAX_PENDING) {
        log.warn('event dropped: too many pending', { llama: `${l.metadata.namespace}/${l.metadata.name}`, reason });
        return;
      }
      pending++;
      const at = new Date();
      // One at a time, in order: a repeat then finds the event its first occurrence created.
      chain = chain.then(() => writeWithRetries(l, type, reason, message, at)).finally(() => { pending--; });
    },
    async flush(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([chain, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
