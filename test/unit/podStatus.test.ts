// summarizePod + restartsText against kubectl's printPod: the cases of TestPrintPod and
// TestPrintPodWithRestartableInitContainer (k8s.io/kubernetes v1.33.13,
// pkg/printers/internalversion/printers_test.go), then kubelet-shaped pods for the everyday statuses.
// Each case states the READY / STATUS / RESTARTS cells kubectl prints.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { restartsText, summarizePod, type PodLike } from '../../src/registry/farm/podStatus.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const sec = 1000;
const day = 24 * 3600 * sec;

type Status = NonNullable<PodLike['status']>;
type CS = NonNullable<Status['containerStatuses']>[number];

/** `make([]api.Container, n)`: n containers with empty names. */
const containers = (n: number) => Array.from({ length: n }, () => ({ name: '' }));
const cs = (s: Partial<CS>): CS => ({ name: '', ...s });
const running = { running: {} };
const lastTerminated = (msAgo: number) => ({ terminated: { finishedAt: ago(msAgo) } });

/** The three cells kubectl's printPod prints, from our summary. */
function cells(pod: PodLike): [string, string, string] {
  const s = summarizePod(pod);
  return [s.ready, s.status, restartsText(s.restarts, s.lastRestartTime, NOW)];
}

describe('summarizePod: upstream TestPrintPod', () => {
  const deleting = { deletionTimestamp: ago(10 * sec) };
  const cases: [string, PodLike, [string, string, string]][] = [
    ['test1: name, containers, restarts, ready', {
      spec: { containers: containers(2) },
      status: { phase: 'podPhase', containerStatuses: [cs({ ready: true, restartCount: 3, state: running }), cs({ restartCount: 3 })] },
    }, ['1/2', 'podPhase', '6']],
    ['test2: a container waiting reason overrides the phase', {
      spec: { containers: containers(2) },
      status: { phase: 'podPhase', containerStatuses: [cs({ ready: true, restartCount: 3, state: running }), cs({ state: { waiting: { reason: 'ContainerWaitingReason' } }, restartCount: 3 })] },
    }, ['1/2', 'ContainerWaitingReason', '6']],
    ['test3: the first container\'s reason wins over later ones', {
      spec: { containers: containers(2) },
      status: { phase: 'podPhase', containerStatuses: [
        cs({ state: { waiting: { reason: 'ContainerWaitingReason' } }, restartCount: 3 }),
        cs({ state: { terminated: { reason: 'ContainerTerminatedReason' } }, restartCount: 3 }),
      ] },
    }, ['0/2', 'ContainerWaitingReason', '6']],
    ['test4: ready without running is not counted', {
      spec: { containers: containers(2) },
      status: { phase: 'podPhase', containerStatuses: [cs({ ready: true, restartCount: 3, state: running }), cs({ ready: true, restartCount: 3 })] },
    }, ['1/2', 'podPhase', '6']],
    ['test5: the pod reason overrides the phase', {
      spec: { containers: containers(2) },
      status: { reason: 'podReason', phase: 'podPhase', containerStatuses: [cs({ ready: true, restartCount: 3, state: running }), cs({ ready: true, restartCount: 3 })] },
    }, ['1/2', 'podReason', '6']],
    ['test6: one running + one completed, no Ready condition → NotReady', {
      spec: { containers: containers(2) },
      status: { phase: 'Running', containerStatuses: [
        cs({ ready: true, restartCount: 3, state: { terminated: { reason: 'Completed', exitCode: 0 } } }),
        cs({ ready: true, restartCount: 3, state: running }),
      ] },
    }, ['1/2', 'NotReady', '6']],
    ['test6b: one running + one completed, Ready condition → Running', {
      spec: { containers: containers(2) },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [
        cs({ ready: true, restartCount: 3, state: { terminated: { reason: 'Completed', exitCode: 0 } } }),
        cs({ ready: true, restartCount: 3, state: running }),
      ] },
    }, ['1/2', 'Running', '6']],
    ['test7: one init container restarting → Init:0/1 with its restarts', {
      spec: { initContainers: containers(1), containers: containers(1) },
      status: { phase: 'podPhase',
        initContainerStatuses: [cs({ ready: false, restartCount: 3, state: running, lastState: lastTerminated(10 * sec) })],
        containerStatuses: [cs({ ready: false, restartCount: 0, state: { waiting: {} } })] },
    }, ['0/1', 'Init:0/1', '3 (10s ago)']],
    ['test8: first of two init containers restarting → Init:0/2', {
      spec: { initContainers: containers(2), containers: containers(1) },
      status: { phase: 'podPhase',
        initContainerStatuses: [cs({ restartCount: 3, state: running, lastState: lastTerminated(10 * sec) }), cs({ state: { waiting: {} } })],
        containerStatuses: [cs({ state: { waiting: {} } })] },
    }, ['0/1', 'Init:0/2', '3 (10s ago)']],
    ['test9: first init done, second restarting → Init:1/2', {
      spec: { initContainers: containers(2), containers: containers(1) },
      status: { phase: 'podPhase',
        initContainerStatuses: [cs({ state: { terminated: {} } }), cs({ restartCount: 3, state: running, lastState: lastTerminated(10 * sec) })],
        containerStatuses: [cs({ state: { waiting: {} } })] },
    }, ['0/1', 'Init:1/2', '3 (10s ago)']],
    ['test10: init restarts add up; the latest restart time wins', {
      spec: { initContainers: containers(2), containers: containers(1) },
      status: { phase: 'podPhase',
        initContainerStatuses: [
          cs({ restartCount: 2, state: { terminated: {} }, lastState: lastTerminated(120 * sec) }),
          cs({ restartCount: 3, state: running, lastState: lastTerminated(10 * sec) }),
        ],
        containerStatuses: [cs({ state: { waiting: {} } })] },
    }, ['0/1', 'Init:1/2', '5 (10s ago)']],
    ['test11: once initialized only app container restarts count', {
      spec: { initContainers: containers(1), containers: containers(1) },
      status: { phase: 'Running',
        initContainerStatuses: [cs({ restartCount: 2, state: { terminated: {} }, lastState: lastTerminated(120 * sec) })],
        containerStatuses: [cs({ ready: false, restartCount: 4, state: running, lastState: lastTerminated(20 * sec) })] },
    }, ['0/1', 'Running', '4 (20s ago)']],
    ['test12: restarted 5d ago', {
      spec: { containers: containers(1) },
      status: { phase: 'Running', containerStatuses: [cs({ ready: true, restartCount: 3, state: running, lastState: lastTerminated(5 * day) })] },
    }, ['1/1', 'Running', '3 (5d ago)']],
    ['test13: one never restarted, the other 10d ago', {
      spec: { containers: containers(2) },
      status: { phase: 'Running', containerStatuses: [
        cs({ ready: true, restartCount: 0, state: running }),
        cs({ ready: true, restartCount: 3, state: running, lastState: lastTerminated(10 * day) }),
      ] },
    }, ['2/2', 'Running', '3 (10d ago)']],
    ['test14: restarts 5d and 20d ago → the sum, the latest', {
      spec: { containers: containers(2) },
      status: { phase: 'Running', containerStatuses: [
        cs({ ready: true, restartCount: 6, state: running, lastState: lastTerminated(5 * day) }),
        cs({ ready: true, restartCount: 3, state: running, lastState: lastTerminated(20 * day) }),
      ] },
    }, ['2/2', 'Running', '9 (5d ago)']],
    ['test15: PodScheduled=False with reason SchedulingGated', {
      spec: { containers: containers(2) },
      status: { phase: 'podPhase', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] },
    }, ['0/2', 'SchedulingGated', '0']],
    ['test16: Succeeded → Completed', {
      spec: { containers: containers(1) },
      status: { phase: 'Succeeded', containerStatuses: [cs({ restartCount: 0, state: { terminated: { reason: 'Completed', exitCode: 0 } } })] },
    }, ['0/1', 'Completed', '0']],
    ['test17: Failed → Error', {
      spec: { containers: containers(1) },
      status: { phase: 'Failed', containerStatuses: [cs({ restartCount: 0, state: { terminated: { reason: 'Error', exitCode: 1 } } })] },
    }, ['0/1', 'Error', '0']],
    ['test18: a terminal pod being deleted keeps its status (not Terminating)', {
      metadata: deleting, spec: { containers: containers(1) },
      status: { phase: 'Succeeded', containerStatuses: [cs({ restartCount: 0, state: { terminated: { reason: 'Completed', exitCode: 0 } } })] },
    }, ['0/1', 'Completed', '0']],
    ['test19: a running pod being deleted → Terminating', {
      metadata: deleting, spec: { containers: containers(1) },
      status: { phase: 'Running', containerStatuses: [cs({ restartCount: 0, state: running })] },
    }, ['0/1', 'Terminating', '0']],
    ['test20: a pending pod being deleted → Terminating', {
      metadata: deleting, spec: { containers: containers(1) }, status: { phase: 'Pending' },
    }, ['0/1', 'Terminating', '0']],
  ];
  for (const [name, pod, want] of cases) it(name, () => assert.deepEqual(cells(pod), want));
});

describe('summarizePod: upstream TestPrintPodWithRestartableInitContainer', () => {
  const sidecars = [{ name: 'restartable-init-1', restartPolicy: 'Always' }, { name: 'restartable-init-2', restartPolicy: 'Always' }];
  const cases: [string, PodLike, [string, string, string]][] = [
    ['first sidecar running but not started → Init:0/2; sidecars count in the total', {
      spec: { initContainers: sidecars, containers: containers(1) },
      status: { phase: 'Pending', conditions: [{ type: 'Initialized', status: 'False' }],
        initContainerStatuses: [
          { name: 'restartable-init-1', ready: false, restartCount: 3, state: running, started: false, lastState: lastTerminated(10 * sec) },
          { name: 'restartable-init-2', ready: false, state: { waiting: {} }, started: false },
        ],
        containerStatuses: [cs({ ready: false, restartCount: 0, state: { waiting: {} } })] },
    }, ['0/3', 'Init:0/2', '3 (10s ago)']],
    ['first sidecar started, second running but not started → Init:1/2', {
      spec: { initContainers: sidecars, containers: containers(1) },
      status: { phase: 'Pending', conditions: [{ type: 'Initialized', status: 'False' }],
        initContainerStatuses: [
          { name: 'restartable-init-1', ready: false, restartCount: 3, state: running, started: true, lastState: lastTerminated(10 * sec) },
          { name: 'restartable-init-2', ready: false, state: running, started: false },
        ],
        containerStatuses: [cs({ ready: false, restartCount: 0, state: { waiting: {} } })] },
    }, ['0/3', 'Init:1/2', '3 (10s ago)']],
    ['both sidecars started, app container running → sidecar restarts count too', {
      spec: { initContainers: sidecars, containers: containers(1) },
      status: { phase: 'Running', conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [
          { name: 'restartable-init-1', ready: false, restartCount: 3, state: running, started: true, lastState: lastTerminated(10 * sec) },
          { name: 'restartable-init-2', ready: false, state: running, started: true },
        ],
        containerStatuses: [cs({ ready: true, restartCount: 4, state: running, lastState: lastTerminated(20 * sec) })] },
    }, ['1/3', 'Running', '7 (10s ago)']],
    ['sidecars failed, app container completed, pod Succeeded → Completed', {
      spec: { initContainers: sidecars, containers: containers(1) },
      status: { phase: 'Succeeded', conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [
          { name: 'restartable-init-1', ready: false, restartCount: 3, state: { terminated: { reason: 'Error', exitCode: 137 } }, started: false, lastState: lastTerminated(10 * sec) },
          { name: 'restartable-init-2', ready: false, state: { terminated: { reason: 'Error', exitCode: 137 } }, started: false },
        ],
        containerStatuses: [cs({ ready: false, restartCount: 4, state: { terminated: { reason: 'Completed', exitCode: 0 } }, lastState: lastTerminated(20 * sec) })] },
    }, ['0/3', 'Completed', '7 (10s ago)']],
    ['statuses of containers the spec does not have', {
      spec: { initContainers: [{ name: 'init1' }, { name: 'sidecar1', restartPolicy: 'Always' }], containers: [{ name: 'container1' }] },
      status: { phase: 'Running',
        initContainerStatuses: [{ name: 'initinvalid' }, { name: 'init1' }, { name: 'sidecar1' }],
        containerStatuses: [{ name: 'containerinvalid' }, { name: 'container1' }] },
    }, ['0/2', 'Init:0/2', '0']],
  ];
  for (const [name, pod, want] of cases) it(name, () => assert.deepEqual(cells(pod), want));
});

describe('summarizePod: kubelet-shaped pods', () => {
  const c = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'nginx' }));
  it('Pending, not yet scheduled (no statuses at all)', () => {
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: { phase: 'Pending' } }), ['0/1', 'Pending', '0']);
    const s = summarizePod({ spec: { containers: c(1) }, status: { phase: 'Pending' } });
    assert.deepEqual(s, { ready: '0/1', readyContainers: 0, totalContainers: 1, status: 'Pending', restarts: 0 });
  });
  it('Pending with ContainerCreating', () => {
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: { phase: 'Pending', containerStatuses: [{ name: 'c0', state: { waiting: { reason: 'ContainerCreating' } } }] } }),
      ['0/1', 'ContainerCreating', '0']);
  });
  it('no status and no spec at all', () => {
    assert.deepEqual(summarizePod({}), { ready: '0/0', readyContainers: 0, totalContainers: 0, status: '', restarts: 0 });
  });
  it('Running and ready, with restarts and a last termination', () => {
    const s = summarizePod({ spec: { containers: c(1) }, status: {
      phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [{ name: 'c0', ready: true, started: true, restartCount: 3, state: { running: { startedAt: ago(60 * sec) } }, lastState: { terminated: { exitCode: 1, finishedAt: ago(90 * sec) } } }],
    } });
    assert.deepEqual(s, { ready: '1/1', readyContainers: 1, totalContainers: 1, status: 'Running', restarts: 3, lastRestartTime: ago(90 * sec) });
    assert.equal(restartsText(s.restarts, s.lastRestartTime, NOW), '3 (90s ago)');
  });
  it('Running, 2 containers, one not ready yet', () => {
    assert.deepEqual(cells({ spec: { containers: c(2) }, status: { phase: 'Running', containerStatuses: [
      { name: 'c0', ready: true, state: { running: {} } }, { name: 'c1', ready: false, state: { running: {} } },
    ] } }), ['1/2', 'Running', '0']);
  });
  it('CrashLoopBackOff: the waiting reason, restarts with the last exit', () => {
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: {
      phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [{ name: 'c0', ready: false, restartCount: 7, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { reason: 'Error', exitCode: 1, finishedAt: ago(30 * sec) } } }],
    } }), ['0/1', 'CrashLoopBackOff', '7 (30s ago)']);
  });
  it('Completed (a finished Job pod)', () => {
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: {
      phase: 'Succeeded', containerStatuses: [{ name: 'c0', ready: false, state: { terminated: { reason: 'Completed', exitCode: 0, finishedAt: ago(5 * sec) } } }],
    } }), ['0/1', 'Completed', '0']);
  });
  it('a terminated container without a reason: ExitCode:N / Signal:N', () => {
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: { phase: 'Failed', containerStatuses: [{ name: 'c0', state: { terminated: { exitCode: 2 } } }] } }), ['0/1', 'ExitCode:2', '0']);
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: { phase: 'Failed', containerStatuses: [{ name: 'c0', state: { terminated: { exitCode: 137, signal: 9 } } }] } }), ['0/1', 'Signal:9', '0']);
  });
  it('Init:0/1 while the only init container runs', () => {
    assert.deepEqual(cells({ spec: { initContainers: [{ name: 'init' }], containers: c(1) }, status: {
      phase: 'Pending', conditions: [{ type: 'Initialized', status: 'False' }],
      initContainerStatuses: [{ name: 'init', state: { running: {} } }],
      containerStatuses: [{ name: 'c0', state: { waiting: { reason: 'PodInitializing' } } }],
    } }), ['0/1', 'Init:0/1', '0']);
  });
  it('Init:Error, Init:ExitCode:N, Init:Signal:N, Init:CrashLoopBackOff', () => {
    const pod = (init: CS): PodLike => ({ spec: { initContainers: [{ name: 'init' }], containers: c(1) }, status: {
      phase: 'Pending', conditions: [{ type: 'Initialized', status: 'False' }], initContainerStatuses: [init],
      containerStatuses: [{ name: 'c0', state: { waiting: { reason: 'PodInitializing' } } }],
    } });
    assert.deepEqual(cells(pod({ name: 'init', state: { terminated: { reason: 'Error', exitCode: 1 } } })), ['0/1', 'Init:Error', '0']);
    assert.deepEqual(cells(pod({ name: 'init', state: { terminated: { exitCode: 3 } } })), ['0/1', 'Init:ExitCode:3', '0']);
    // exit code 0 means done, whatever else is set: the app containers decide
    assert.deepEqual(cells(pod({ name: 'init', state: { terminated: { exitCode: 0, signal: 15 } } })), ['0/1', 'PodInitializing', '0']);
    assert.deepEqual(cells(pod({ name: 'init', state: { terminated: { exitCode: 143, signal: 15 } } })), ['0/1', 'Init:Signal:15', '0']);
    assert.deepEqual(cells(pod({ name: 'init', restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, finishedAt: ago(40 * sec) } } })),
      ['0/1', 'Init:CrashLoopBackOff', '4 (40s ago)']);
  });
  it('PodInitializing is not an init failure: Init:i/n', () => {
    assert.deepEqual(cells({ spec: { initContainers: [{ name: 'a' }, { name: 'b' }], containers: c(1) }, status: {
      phase: 'Pending', initContainerStatuses: [{ name: 'a', state: { terminated: { exitCode: 0, reason: 'Completed' } } }, { name: 'b', state: { waiting: { reason: 'PodInitializing' } } }],
    } }), ['0/1', 'Init:1/2', '0']);
  });
  it('Terminating, and Unknown for a pod on a lost node', () => {
    const deleting = { deletionTimestamp: ago(2 * sec) };
    const status: Status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'c0', ready: true, state: { running: {} } }] };
    assert.deepEqual(cells({ metadata: deleting, spec: { containers: c(1) }, status }), ['1/1', 'Terminating', '0']);
    assert.deepEqual(cells({ metadata: deleting, spec: { containers: c(1) }, status: { ...status, reason: 'NodeLost' } }), ['1/1', 'Unknown', '0']);
    assert.deepEqual(cells({ spec: { containers: c(1) }, status: { ...status, reason: 'NodeLost' } }), ['1/1', 'NodeLost', '0'], 'NodeLost without deletion is printed as the reason');
  });
  it('only the first Initialized condition counts (isPodInitializedConditionTrue)', () => {
    // An init container failed; a (malformed) second Initialized=True condition must not make kubectl read the app containers.
    assert.deepEqual(cells({ spec: { initContainers: [{ name: 'init' }], containers: c(1) }, status: {
      phase: 'Pending', conditions: [{ type: 'Initialized', status: 'False' }, { type: 'Initialized', status: 'True' }],
      initContainerStatuses: [{ name: 'init', state: { terminated: { reason: 'Error', exitCode: 1 } } }],
      containerStatuses: [{ name: 'c0', state: { waiting: { reason: 'PodInitializing' } } }],
    } }), ['0/1', 'Init:Error', '0']);
  });
  it('no restart time known → just the count', () => {
    assert.equal(restartsText(2, undefined, NOW), '2');
    assert.equal(restartsText(0, ago(10 * sec), NOW), '0');
  });
});
