// Child process: the etcd round trip that a consistent read of the etcd3 backend adds (etcd3Storage's
// consistentRead: a linearizable keys-only Range of one key, for the header's revision), timed through
// the same client the server uses (src/storage/etcd3/client.ts: the etcd3 npm client over grpc-js).
import { connectEtcd } from '../../src/storage/etcd3/client.js';
import { cpuTotalMs, nowMs, percentile, serveIpc } from '../lib/common.js';

export interface RangeArgs {
  url: string;
  /** The key asked for (the server asks for "<prefix>/<group>/<resource>/"). */
  key: string;
  /** One call at a time, this many (after 200 untimed). */
  sequential: number;
  /** Then `concurrency` calls in flight for `durationMs`. */
  concurrency: number; durationMs: number;
}

export interface RangeResult {
  sequential: { calls: number; p50Us: number; p99Us: number; meanUs: number; clientCpuUsPerCall: number };
  concurrent: { calls: number; perSecond: number; p50Us: number; p99Us: number; clientCpuUsPerCall: number };
}

serveIpc({
  async measure(a: RangeArgs): Promise<RangeResult> {
    const client = connectEtcd({ hosts: [a.url] });
    const key = Buffer.from(a.key);
    const once = () => client.range({ key, keys_only: true });
    try {
      for (let i = 0; i < 200; i++) await once();
      const seq = new Float64Array(a.sequential);
      let c0 = cpuTotalMs();
      for (let i = 0; i < a.sequential; i++) {
        const t = nowMs();
        await once();
        seq[i] = (nowMs() - t) * 1000;
      }
      const seqCpu = cpuTotalMs() - c0;
      const sortedSeq = Float64Array.from(seq).sort();

      const lat: number[] = [];
      c0 = cpuTotalMs();
      const t0 = nowMs();
      const end = t0 + a.durationMs;
      await Promise.all(Array.from({ length: a.concurrency }, async () => {
        while (nowMs() < end) {
          const t = nowMs();
          await once();
          lat.push((nowMs() - t) * 1000);
        }
      }));
      const elapsed = nowMs() - t0;
      const conCpu = cpuTotalMs() - c0;
      const sortedCon = Float64Array.from(lat).sort();
      return {
        sequential: {
          calls: a.sequential, p50Us: percentile(sortedSeq, 50), p99Us: percentile(sortedSeq, 99),
          meanUs: seq.reduce((x, y) => x + y, 0) / a.sequential, clientCpuUsPerCall: (1000 * seqCpu) / a.sequential,
        },
        concurrent: {
          calls: lat.length, perSecond: (1000 * lat.length) / elapsed, p50Us: percentile(sortedCon, 50), p99Us: percentile(sortedCon, 99),
          clientCpuUsPerCall: (1000 * conCpu) / lat.length,
        },
      };
    } finally {
      client.close();
    }
  },
});
