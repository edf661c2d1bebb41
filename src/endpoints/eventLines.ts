// Watch event lines as bytes, and their writer. A watch fan-out writes the same event to every watcher:
// the line, already framed as an HTTP/1.1 chunk, is encoded once per event, so per watcher only the
// write is left.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { drained } from './bodyBuilder.js';
import { isHttp11 } from './protocol.js';

/** Event lines framed as one HTTP/1.1 chunk; `bytes` is the lines alone (a view into `chunk`). */
export interface EventBytes {
  readonly chunk: Buffer;
  readonly bytes: Buffer;
}

export const eventLine = (type: string, object: string): string => `{"type":"${type}","object":${object}}\n`;

/** The bytes of an event line around its object: `{"type":"","object":}` and the newline, plus the type (ASCII). */
const LINE_OVERHEAD = eventLine('', '').length;

/** The size of an event line's embedded object (what upstream's watch-event-size histogram observes). */
export const objectBytes = (type: string, line: EventBytes): number => line.bytes.length - LINE_OVERHEAD - type.length;

/** `parts` (lines as text or bytes) framed as one chunk: one allocation, one copy of each part. */
export function eventBytes(parts: (string | Buffer)[]): EventBytes {
  let size = 0;
  for (const p of parts) size += typeof p === 'string' ? Buffer.byteLength(p) : p.length;
  const head = `${size.toString(16)}\r\n`;
  const chunk = Buffer.allocUnsafe(head.length + size + 2);
  let at = chunk.write(head, 0, 'latin1');
  for (const p of parts) at += typeof p === 'string' ? chunk.write(p, at) : p.copy(chunk, at);
  chunk.write('\r\n', at, 'latin1');
  return { chunk, bytes: chunk.subarray(head.length, head.length + size) };
}

// The lines of the most recent entries only: a fan-out encodes one entry for every watcher in a row, while
// keeping a line per stored object (a watch from resourceVersion 0 replays them all) would copy the store.
const SHARED_MAX_ENTRIES = 256;
const SHARED_MAX_BYTES = 8 << 20;
const shared = new Map<object, { lines: Partial<Record<string, EventBytes>>; bytes: number }>();
let sharedBytes = 0;

/**
 * A stored object's event line, the same bytes for every watcher it goes to, as upstream's cachingObject
 * serializes an event once for all watchers. Entries are immutable, so a cached line cannot go stale.
 */
export function sharedEventLine(type: string, entry: { readonly json: string }): EventBytes {
  let cached = shared.get(entry);
  if (!cached) {
    for (const [oldest, c] of shared) {
      if (shared.size < SHARED_MAX_ENTRIES && sharedBytes < SHARED_MAX_BYTES) break;
      shared.delete(oldest);
      sharedBytes -= c.bytes;
    }
    shared.set(entry, (cached = { lines: {}, bytes: 0 }));
  }
  let line = cached.lines[type];
  if (!line) {
    line = cached.lines[type] = eventBytes([eventLine(type, entry.json)]);
    cached.bytes += line.chunk.length;
    sharedBytes += line.chunk.length;
  }
  return line;
}

export interface EventWriter {
  /**
   * The bytes of `lines`, in the pieces to write one after another: views of at most WRITE_SLICE bytes.
   * A TLS socket encrypts a whole write into a buffer of its own: a 1 MiB event written at once to a
   * client that reads nothing held 1-2 MiB per watcher; written in slices, waiting for each to drain, it holds one.
   */
  pieces(lines: EventBytes[]): Buffer[];
  /** Writes one piece; false when the stream wants the caller to wait for `drained()`. */
  write(piece: Buffer): boolean;
  drained(): Promise<void>;
}

/** The largest piece of an event written at once (the pieces are views: nothing is copied). */
export const WRITE_SLICE = 64 * 1024;

const joined = (lines: EventBytes[]): EventBytes => (lines.length === 1 ? lines[0] : eventBytes(lines.map((l) => l.bytes)));

function sliced(b: Buffer): Buffer[] {
  if (b.length <= WRITE_SLICE) return [b];
  const out: Buffer[] = [];
  for (let at = 0; at < b.length; at += WRITE_SLICE) out.push(b.subarray(at, at + WRITE_SLICE));
  return out;
}

/**
 * Writes to the response once its head is flushed. HTTP/1.1 GETs write whole chunks straight to the socket:
 * node's chunked res.write frames, corks and writes three buffers per call, for every watcher and event.
 * The head is already on the socket (the response buffers nothing of its own: its writableLength is the
 * socket's), and the terminating chunk is res.end()'s, so the bytes stay in order.
 * Anything else (HTTP/2, HTTP/1.0, HEAD, a response still queued behind a pipelined one: no socket yet) uses res.write.
 * `wroteDirectly` hears of the body bytes that went around res.write (the response-size metric counts them).
 */
export function eventWriter(req: IncomingMessage, res: ServerResponse, wroteDirectly: (bodyBytes: number) => void): EventWriter {
  const socket: Socket | null = res.socket;
  const direct = isHttp11(req) && req.method === 'GET' && socket !== null && res.headersSent && res.writableLength === socket.writableLength;
  if (direct) {
    return {
      pieces(lines) {
        const out = joined(lines);
        wroteDirectly(out.bytes.length);
        return sliced(out.chunk);
      },
      write: (piece) => socket.write(piece),
      drained: () => drained(socket),
    };
  }
  return { pieces: (lines) => sliced(joined(lines).bytes), write: (piece) => res.write(piece), drained: () => drained(res) };
}
