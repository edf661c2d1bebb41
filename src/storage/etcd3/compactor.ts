// kube's etcd compactor (storage/etcd3/compact.go): every interval, one replica compacts etcd's
// history up to the revision it saw one interval earlier. The replicas agree through the version of
// "compact_rev_key" used as a logical clock: a compare-and-swap on it wins the turn; a loser adopts
// the winner's clock and tries again next interval, so one replica compacts per interval, and if it
// dies another takes over within two. The key is kube's own, so sharing an etcd with kube-apiserver
// also shares its compaction.
import type { BackendLog } from '../backend.js';
import type { EtcdClient } from './client.js';

export const COMPACT_REV_KEY = 'compact_rev_key';

/** One compaction turn's outcome (Compact in compact.go). */
export interface CompactTurn {
  /** The clock (compact_rev_key's version) as now known. */
  version: number;
  /** etcd's revision now: what the next turn compacts up to. */
  revision: number;
  /** The revision compacted in this turn; 0 when none (another replica had the turn, or it was the first). */
  compacted: number;
}

/**
 * One turn: if the clock still reads `expectVersion`, advance it, and compact up to `rev` (the revision
 * recorded one turn ago; 0 on the first turn, which only records). Otherwise adopt the other's clock.
 */
export async function compactTurn(client: EtcdClient, expectVersion: number, rev: number): Promise<CompactTurn> {
  const key = Buffer.from(COMPACT_REV_KEY);
  const txn = await client.txn({
    compare: [{ key, target: 'Version', result: 'Equal', version: expectVersion }],
    success: [{ request_put: { key, value: Buffer.from(String(rev)) } }],
    failure: [{ request_range: { key } }],
  });
  const now = txn.header.revision;
  if (!txn.succeeded) {
    const kv = txn.responses[0]?.response_range?.kvs[0];
    return { version: kv?.version ?? 0, revision: now, compacted: 0 };
  }
  if (rev === 0) return { version: expectVersion + 1, revision: now, compacted: 0 };
  await client.compact(rev);
  return { version: expectVersion + 1, revision: now, compacted: rev };
}

export class Compactor {
  private timer: NodeJS.Timeout | undefined;
  private version = 0;
  private rev = 0;
  private stopped = false;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: EtcdClient,
    private readonly intervalMs: number,
    private readonly log: BackendLog,
  ) {}

  /** The first turn comes one interval after start. */
  start(): void {
    if (this.intervalMs > 0 && !this.stopped) this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    this.timer = setTimeout(() => { this.running = this.turn(); }, this.intervalMs);
    this.timer.unref();
  }

  private async turn(): Promise<void> {
    try {
      const t = await compactTurn(this.client, this.version, this.rev);
      [this.version, this.rev] = [t.version, t.revision];
      if (t.compacted) this.log.debug({ revision: t.compacted }, 'etcd: compacted');
    } catch (e) {
      // The clock and revision stay: the next turn tries again (compact.go does the same).
      this.log.warn({ err: e }, 'etcd: compaction failed');
    }
    if (!this.stopped) this.schedule();
  }
}
