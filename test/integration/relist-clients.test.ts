// Real client libraries across a replica crash on etcd3 (issue 10): a client-go informer and a kube-rs
// watcher (kube::runtime::watcher + reflector, default config and backoff, as a kube-rs controller runs
// it), each connected to replica A, which is SIGKILLed while replica B takes writes and then restarts on
// the same port. A's new watch cache begins at etcd's revision now, so the client's resumed watch (from
// its last resourceVersion) gets 410 Expired; it must list again, and its store must converge to what B
// wrote. Both programs speak one protocol (test/clients/README.md): a line per stdin expectation.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { writeKubeconfig } from '../../src/certs/kubeconfig.js';
import { ensureClientGo, ensureKubeRs } from '../clients/clients.js';
import { etcdReplicas, type EtcdReplicas, type Replica } from '../helpers/replicas.js';

/** What a follower reports in each line's detail; `gone` (watch errors with code 410) only from kube-rs. */
interface FollowDetail { lists: number; gone?: number; errors?: string[] }
interface FollowLine { client: string; step: string; ok: boolean; error?: string; detail: FollowDetail | null }

interface Follower {
  client: string;
  ensure: () => Promise<string>;
  args: (kubeconfig: string, ns: string) => string[];
}

const followers: Follower[] = [
  { client: 'client-go', ensure: ensureClientGo, args: (kubeconfig, ns) => ['-follow', '-kubeconfig', kubeconfig, '-namespace', ns, '-timeout', '4m'] },
  { client: 'kube-rs', ensure: ensureKubeRs, args: (kubeconfig, ns) => ['--kubeconfig', kubeconfig, '--namespace', ns, '--timeout', '240'] },
];

async function ok(p: Promise<{ status: number; body: string }>): Promise<void> {
  const r = await p;
  assert.ok(r.status === 200 || r.status === 201, `status ${r.status}: ${r.body.slice(0, 500)}`);
}

describe('client libraries relist after a replica crash on etcd3', () => {
  let env: EtcdReplicas;
  let a: Replica;
  let b: Replica;
  const bins = new Map<string, string>();

  // Cold builds (cargo, go) take minutes: they belong to setup, not to the scenario's own time bound.
  before(async () => {
    for (const f of followers) bins.set(f.client, await f.ensure());
    env = await etcdReplicas('relist');
    [a, b] = await Promise.all([env.set.add('a'), env.set.add('b')]);
  }, { timeout: 20 * 60_000 });
  after(() => env?.close());

  for (const f of followers) {
    it(`${f.client}: a watch resumed on the restarted replica gets 410, the client lists again and converges`, { timeout: 5 * 60_000 }, async (t) => {
      const ns = f.client;
      const llamas = `/apis/farm.example.com/v1alpha/namespaces/${ns}/llamas`;
      const name = (n: number) => `${ns}-${n}`;
      const llama = (n: number) => ({ apiVersion: 'farm.example.com/v1alpha', kind: 'Llama', metadata: { name: name(n), namespace: ns }, spec: { weight: n + 1, height: n + 1 } });
      const kubeconfig = join(env.dir, `${ns}.kubeconfig`);
      await writeKubeconfig(kubeconfig, { server: a.url, caPem: env.set.caPem, token: env.set.token, namespace: ns });
      for (const n of [0, 1, 2]) await ok(a.request('POST', llamas, llama(n)));

      const child = spawn(bins.get(f.client)!, f.args(kubeconfig, ns), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', RUST_BACKTRACE: '1' } });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const step = async (want: string): Promise<FollowDetail> => {
        const { value, done } = await lines.next();
        assert.ok(!done, `${f.client} ended before ${want} (exit ${child.exitCode ?? child.signalCode}); stderr:\n${stderr.slice(-3000)}`);
        const r = JSON.parse(value as string) as FollowLine;
        assert.equal(r.client, f.client);
        assert.equal(r.step, want, value as string);
        assert.ok(r.ok && r.detail, `${want}: ${r.error} ${JSON.stringify(r.detail)}\nstderr:\n${stderr.slice(-3000)}`);
        return r.detail;
      };
      const converge = (ns: number[]) => {
        child.stdin.write(`${JSON.stringify({ names: ns.map(name) })}\n`);
        return step('follow-converged');
      };
      try {
        assert.equal((await step('follow-synced')).lists, 1, 'one initial list');
        assert.equal((await converge([0, 1, 2])).lists, 1, 'no relist while nothing went wrong');
        await a.kill('SIGKILL');
        for (const n of [3, 4]) await ok(b.request('POST', llamas, llama(n)));
        await ok(b.request('DELETE', `${llamas}/${name(0)}`));
        await a.start();
        const healed = await converge([1, 2, 3, 4]);
        t.diagnostic(`${f.client}: ${healed.lists} lists in all${healed.gone === undefined ? '' : `, ${healed.gone} watch errors with code 410; errors seen: ${JSON.stringify(healed.errors)}`}`);
        assert.ok(healed.lists >= 2, `the client listed again (lists = ${healed.lists})`);
        if (healed.gone !== undefined) assert.ok(healed.gone >= 1, `the resumed watch got a 410 ERROR event (errors: ${JSON.stringify(healed.errors)})`);
      } finally {
        child.stdin.end();
        child.kill('SIGKILL');
      }
    });
  }
});
