// A streaming response read line by line (watch events), for the HTTP/1.1 and HTTP/2 test clients.
import type { Readable } from 'node:stream';
import { LineReader } from '../../src/apimachinery/ndjson.js';
import type { Stream } from './testServer.js';

export function lineStream(res: Readable, status: number, close: () => void): Stream {
  const lines: string[] = [];
  const reader = new LineReader();
  let waiter: (() => void) | undefined;
  let read = 0;
  let done = false;
  const ended = new Promise<void>((r) => { res.on('end', r); res.on('close', r); });
  void ended.then(() => { done = true; waiter?.(); });
  res.on('data', (c: Buffer) => {
    for (const line of reader.push(c)) lines.push(line);
    waiter?.();
  });
  return {
    status, lines, ended, close,
    async next(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (read >= lines.length) {
        if (done) throw new Error('stream ended');
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no watch event within ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, left);
          waiter = () => { clearTimeout(t); r(); };
        });
      }
      return lines[read++];
    },
  };
}
