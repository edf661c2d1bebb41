// Builds a response body as bytes from many ready JSON pieces. Joining them into one big string
// costs a copy, then Node flattens and UTF-8 encodes it again when sending (and fastify measures
// it first); writing each piece once into a buffer and sending that skips all three.

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

  /** One ASCII character (a separator), without a string write's overhead. */
  writeAscii(code: number): void {
    if (this.len + 1 > this.buf.length) this.grow(this.len + 1);
    this.buf[this.len++] = code;
  }

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
