// Builds a response body as bytes from many ready JSON pieces. Joining them into one big string
// costs a copy, then Node flattens and UTF-8 encodes it again when sending (and fastify measures
// it first); writing each piece once into a buffer and sending that skips all three.
import { responseGone } from './protocol.js';
import { waitForTurn } from '../apimachinery/turns.js';

/** Reused between builds; a builder takes it while it works (none if another holds it, or threw). */
let scratch: Buffer | undefined = Buffer.allocUnsafe(64 * 1024);
/** A scratch grown past this is dropped after use rather than kept for the process's lifetime. */
const KEEP_SCRATCH_BYTES = 8 * 1024 * 1024;

export class BodyBuilder {
  private buf: Buffer;
  private len = 0;

  constructor() {
    this.buf = scratch ?? Buffer.allocUnsafe(64 * 1024);
    scratch = undefined;
  }

  write(s: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8; with less room, write() would truncate.
    if (this.len + s.length * 3 > this.buf.length) this.grow(this.len + s.length * 3);
    this.len += this.buf.write(s, this.len);
  }

  /** Bytes written so far. */
  get byteLength(): number { return this.len; }

  /** The bytes written, in a buffer of their own (the scratch is reused by the next build). */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.len);
    out.set(this.buf.subarray(0, this.len)); // a plain memcpy; Buffer#copy checks more on the way
    if (this.buf.length <= KEEP_SCRATCH_BYTES) scratch = this.buf;
    // Handed back: writing on would write into the next build's scratch.
    this.buf = Buffer.alloc(0);
    this.len = 0;
    return out;
  }

  private grow(need: number): void {
    const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
}

/** Something that takes a body's text piece by piece. */
export interface Sink { write(s: string): void }

/** A list body as head, one piece per item, tail: so it can be written whole or a chunk at a time. */
export interface ListPieces {
  count: number;
  head(out: Sink): void;
  /** Item `i` (0-based), with whatever separates it from the previous one. */
  item(out: Sink, i: number): void;
  tail(out: Sink): void;
}

export function writeAllPieces(p: ListPieces, out: Sink): void {
  p.head(out);
  for (let i = 0; i < p.count; i++) p.item(out, i);
  p.tail(out);
}

/** The body's text as one string. */
export function piecesText(p: ListPieces): string {
  let text = '';
  writeAllPieces(p, { write: (s) => { text += s; } });
  return text;
}

/** The body's bytes in one buffer. */
export function piecesBuffer(p: ListPieces): Buffer {
  const b = new BodyBuilder();
  writeAllPieces(p, b);
  return b.finish();
}

/** Past this, a list body is made a chunk at a time, as the client reads it. */
const LIST_CHUNK_BYTES = 32 * 1024;

/** The rest of a body too large for one chunk: each call makes the next chunk, undefined at the end. */
export interface ChunkSource { first: Buffer; next(): Buffer | undefined }

/**
 * The whole body as bytes when it fits in one chunk; otherwise its first chunk and a source that makes
 * each next one on demand (see writeChunks), so a client that reads nothing holds a few chunks of memory,
 * not the whole body (1,000 unread 450 KB LISTs on one HTTP/2 connection would otherwise hold 450 MB).
 */
export function piecesBody(p: ListPieces, chunkBytes = LIST_CHUNK_BYTES): Buffer | ChunkSource {
  let nextItem = 0;
  let started = false;
  let done = false;
  const fill = (): Buffer => {
    const b = new BodyBuilder(); // per chunk: a suspended body keeps no scratch buffer
    if (!started) { p.head(b); started = true; }
    while (nextItem < p.count && b.byteLength < chunkBytes) p.item(b, nextItem++);
    if (nextItem === p.count) { p.tail(b); done = true; }
    return b.finish();
  };
  const first = fill();
  if (done) return first;
  return { first, next: () => (done ? undefined : fill()) };
}

/** At most this many bytes of a response wait unsent before the next chunk is made. */
const UNSENT_BUDGET_BYTES = 64 * 1024;

export interface ChunkSink {
  write(chunk: Buffer): boolean;
  end(): void;
  readonly writableLength: number;
  /** Set on a closed ServerResponse; node's HTTP/2 response has none (see responseGone). */
  readonly destroyed?: boolean;
  on(event: 'drain' | 'close', f: () => void): unknown;
  off(event: 'drain' | 'close', f: () => void): unknown;
}

/**
 * Writes the chunks as fast as the connection takes them: a client that keeps up gets the whole body in
 * one turn of the event loop (data the kernel accepts at once is not "unsent") unless the turn's slice of
 * chunk work is spent; one that does not stalls only its own response, holding at most the budget plus a chunk.
 */
export async function writeChunks(res: ChunkSink, src: ChunkSource): Promise<void> {
  for (let chunk: Buffer | undefined = src.first; chunk; chunk = src.next()) {
    if (responseGone(res)) return;
    // 'drain' comes only after a write that returned false: wait for it only then.
    if (!res.write(chunk) && res.writableLength > UNSENT_BUDGET_BYTES) await drained(res);
    // The next chunk waits for a later turn once this turn's shared budget (every response's chunks, watch
    // events, the fan-out) is spent.
    const room = waitForTurn();
    if (room) await room;
  }
  if (!responseGone(res)) res.end();
}

/** Resolves when the stream has room again, or is gone (at once if it is gone already). */
export function drained(res: Pick<ChunkSink, 'on' | 'off'>): Promise<void> {
  if (responseGone(res)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
    res.on('drain', done);
    res.on('close', done);
  });
}
