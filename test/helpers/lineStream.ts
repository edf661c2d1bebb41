// A streaming response read line by line (watch events), for the HTTP/1.1 and HTTP/2 test clients.
import type { Readable } from 'node:stream';
import type { Stream } from './testServer.js';

export function lineStream(res: Readable, status: number, close: () => void): Stream {
  const lines: string[] = [];
  let buf = '';
  let waiter: (() => void) | undefined;
  let read = 0;
  let done = false;
  const ended = new Promise<void>((r) => { res.on('end', r); res.on('close', r); });
  void ended.then(() => { done = true; waiter?.(); });
  res.setEncoding('utf8');
  res.on('data', (c: string) => {
    buf += c;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { lines.push(buf.slice(0, i)); buf = buf.slice(i + 1); }
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
