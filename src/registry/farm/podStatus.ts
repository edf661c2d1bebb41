// The READY / STATUS / RESTARTS that `kubectl get pods` prints, ported from kubectl's printPod
// (kubernetes/pkg/printers/internalversion/printers.go) so FarmPods read the same at a glance.
import { age } from '../../apimachinery/duration.js';
import { rfc3339 } from '../../apimachinery/meta.js';

interface ContainerState {
  waiting?: { reason?: string };
  running?: { startedAt?: string };
  terminated?: { reason?: string; exitCode?: number; signal?: number; finishedAt?: string };
}
interface ContainerStatus {
  name: string; ready?: boolean; started?: boolean; restartCount?: number;
  state?: ContainerState; lastState?: ContainerState;
}
export interface PodLike {
  metadata?: { deletionTimestamp?: string };
  spec?: { containers?: { name: string; image?: string }[]; initContainers?: { name: string; restartPolicy?: string }[] };
  status?: {
    phase?: string; reason?: string;
    conditions?: { type: string; status?: string; reason?: string }[];
    containerStatuses?: ContainerStatus[]; initContainerStatuses?: ContainerStatus[];
  };
}

export interface PodSummary { ready: string; readyContainers: number; totalContainers: number; status: string; restarts: number; lastRestartTime?: string }

const terminalPhases = new Set(['Succeeded', 'Failed']);

export function summarizePod(pod: PodLike): PodSummary {
  const spec = pod.spec ?? {};
  const st = pod.status ?? {};
  const initSpecs = new Map((spec.initContainers ?? []).map((c) => [c.name, c]));
  const restartable = (name: string) => initSpecs.get(name)?.restartPolicy === 'Always';
  const totalContainers = (spec.containers ?? []).length + (spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').length;
  let readyContainers = 0;
  let restarts = 0;
  let restartableRestarts = 0;
  let lastRestart = 0;
  let lastRestartableRestart = 0;
  const finished = (s?: ContainerState) => (s?.terminated?.finishedAt ? Date.parse(s.terminated.finishedAt) : 0);

  let reason = st.reason || st.phase || '';
  if ((st.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.reason === 'SchedulingGated')) reason = 'SchedulingGated';

  let initializing = false;
  const inits = st.initContainerStatuses ?? [];
  for (let i = 0; i < inits.length; i++) {
    const c = inits[i];
    restarts += c.restartCount ?? 0;
    lastRestart = Math.max(lastRestart, finished(c.lastState));
    if (restartable(c.name)) {
      restartableRestarts += c.restartCount ?? 0;
      lastRestartableRestart = Math.max(lastRestartableRestart, finished(c.lastState));
    }
    const t = c.state?.terminated;
    if (t && (t.exitCode ?? 0) === 0) continue;
    if (restartable(c.name) && c.started) { if (c.ready) readyContainers++; continue; }
    if (t) reason = t.reason ? `Init:${t.reason}` : t.signal ? `Init:Signal:${t.signal}` : `Init:ExitCode:${t.exitCode ?? 0}`;
    else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${(spec.initContainers ?? []).length}`;
    initializing = true;
    break;
  }

  // isPodInitializedConditionTrue: the first Initialized condition decides.
  const initialized = (st.conditions ?? []).find((c) => c.type === 'Initialized')?.status === 'True';
  if (!initializing || initialized) {
    restarts = restartableRestarts;
    lastRestart = lastRestartableRestart;
    let hasRunning = false;
    const cs = st.containerStatuses ?? [];
    for (let i = cs.length - 1; i >= 0; i--) {
      const c = cs[i];
      restarts += c.restartCount ?? 0;
      lastRestart = Math.max(lastRestart, finished(c.lastState));
      const s = c.state ?? {};
      if (s.waiting?.reason) reason = s.waiting.reason;
      else if (s.terminated?.reason) reason = s.terminated.reason;
      else if (s.terminated) reason = s.terminated.signal ? `Signal:${s.terminated.signal}` : `ExitCode:${s.terminated.exitCode ?? 0}`;
      else if (c.ready && s.running) { hasRunning = true; readyContainers++; }
    }
    if (reason === 'Completed' && hasRunning) {
      reason = (st.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata?.deletionTimestamp && st.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata?.deletionTimestamp && !terminalPhases.has(st.phase ?? '')) reason = 'Terminating';

  const summary: PodSummary = { ready: `${readyContainers}/${totalContainers}`, readyContainers, totalContainers, status: reason, restarts };
  if (restarts !== 0 && lastRestart > 0) summary.lastRestartTime = rfc3339(new Date(lastRestart));
  return summary;
}

/** kubectl's RESTARTS cell: "3 (5m ago)" once a restart time is known. */
export function restartsText(restarts: number, lastRestartTime: string | undefined, now: number): string {
  return restarts !== 0 && lastRestartTime ? `${restarts} (${age(lastRestartTime, now)} ago)` : String(restarts);
}
