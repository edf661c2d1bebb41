// Protocol Buffers wire format, as much of it as etcd's messages need: varints (int64 as a number,
// exact up to 2^53, which revisions never reach), length-delimited bytes and nested messages. A
// value's bytes are copied once, into the finished message: a nested message's length is filled in
// when it ends.

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

export class ProtoWriter {
  private readonly parts: Uint8Array[] = [];
  /** Bytes in `parts`; the varints written since the last part are in `small`. */
  private flushed = 0;
  private small: number[] = [];

  /** A varint field; 0 and false are proto3's defaults and are left out unless `always` (a oneof member). */
  varint(field: number, n: number | boolean | undefined, always = false): this {
    const v = typeof n === 'boolean' ? Number(n) : n ?? 0;
    if (v === 0 && !always) return this;
    this.raw(field << 3 | VARINT);
    this.raw(v);
    return this;
  }

  /** A bytes or string field; empty is left out. */
  bytes(field: number, b: Uint8Array | string | undefined): this {
    if (b === undefined || b.length === 0) return this;
    const buf = typeof b === 'string' ? Buffer.from(b) : b;
    this.raw(field << 3 | LEN);
    this.raw(buf.length);
    this.part(buf);
    return this;
  }

  /** A nested message, written even when empty (it may be a oneof member). */
  message<T>(field: number, value: T, write: (w: ProtoWriter, value: T) => void): this {
    this.raw(field << 3 | LEN);
    const at = this.part(new Uint8Array(0)); // the length, once known
    const start = this.flushed;
    write(this, value);
    this.part(new Uint8Array(0));
    const len = Uint8Array.from(pushVarint([], this.flushed - start));
    this.parts[at] = len;
    this.flushed += len.length;
    return this;
  }

  finish(): Buffer {
    this.part(new Uint8Array(0));
    return Buffer.concat(this.parts, this.flushed);
  }

  private raw(n: number): void {
    // Any integer below int64's limit is written as it is (past 2^53 that is the float's value: a
    // revision too large for any etcd, which answers "future revision"). Negatives are never sent.
    if (!Number.isInteger(n) || n < 0 || n >= 2 ** 63) throw new RangeError(`not a protobuf varint: ${n}`);
    pushVarint(this.small, n);
  }

  /** Appends the pending varints, then `b`; returns `b`'s index. */
  private part(b: Uint8Array): number {
    if (this.small.length > 0) {
      this.parts.push(Uint8Array.from(this.small));
      this.flushed += this.small.length;
      this.small = [];
    }
    this.flushed += b.length;
    return this.parts.push(b) - 1;
  }
}

/** Appends the varint of a non-negative integer (division, not shifts: past 2^31 shifts wrap). */
function pushVarint(out: number[], n: number): number[] {
  while (n > 0x7f) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

/** The two's-complement int64 of the 10-byte varint at `at` (its top bit is set). */
function negative(buf: Buffer, at: number): number {
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < 10; i++) {
    const b = buf[at + i] & 0x7f;
    if (i < 4) lo |= b << (7 * i);
    else if (i === 4) {
      lo |= (b & 0x0f) << 28;
      hi |= b >> 4;
    } else hi |= b << (7 * i - 32);
  }
  return -((~hi >>> 0) * 2 ** 32 + (~lo >>> 0) + 1);
}

/** Reads one message's fields: `next()` gives each field's number, then one of the readers takes its value. */
export class ProtoReader {
  private pos: number;
  private wireType = 0;

  constructor(private readonly buf: Buffer, start = 0, private readonly end = buf.length) {
    this.pos = start;
  }

  /** The buffer read (a `span()` is an offset into it). */
  get buffer(): Buffer { return this.buf; }

  /** The next field's number, or 0 at the end of the message. */
  next(): number {
    if (this.pos >= this.end) return 0;
    const tag = this.uint();
    this.wireType = tag % 8;
    const field = Math.floor(tag / 8);
    if (field === 0) throw new Error('protobuf: field number 0');
    return field;
  }

  /**
   * An int64 field as a number: exact from -2^53 to 2^53 (etcd's revisions are far below; a rejected
   * watch's id is -1), rounded beyond.
   */
  int(): number {
    this.expect(VARINT);
    const start = this.pos;
    const n = this.uint();
    return n < 2 ** 63 ? n : negative(this.buf, start);
  }

  bool(): boolean { return this.int() !== 0; }

  /** A bytes field: a view into the received buffer, not a copy. */
  bytes(): Buffer {
    const [start, end] = this.delimited();
    return this.buf.subarray(start, end);
  }

  string(): string {
    const [start, end] = this.delimited();
    return this.buf.toString('utf8', start, end);
  }

  /** A length-delimited field's start and end in `buffer`, left undecoded. */
  span(): [number, number] { return this.delimited(); }

  /** A nested message, read by `read` with a reader of its own. */
  message<T>(read: (r: ProtoReader) => T): T {
    const [start, end] = this.delimited();
    return read(new ProtoReader(this.buf, start, end));
  }

  /** Passes over a field this client does not read. */
  skip(): void {
    switch (this.wireType) {
      case VARINT: this.uint(); return;
      case FIXED64: this.advance(8); return;
      case LEN: this.delimited(); return;
      case FIXED32: this.advance(4); return;
      default: throw new Error(`protobuf: unsupported wire type ${this.wireType}`);
    }
  }

  private delimited(): [number, number] {
    this.expect(LEN);
    const len = this.uint();
    const start = this.pos;
    this.advance(len);
    return [start, this.pos];
  }

  private uint(): number {
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new Error('protobuf: truncated varint');
      const b = this.buf[this.pos++];
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
    }
    throw new Error('protobuf: varint longer than 10 bytes');
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw new Error('protobuf: truncated field');
    this.pos += n;
  }

  private expect(wireType: number): void {
    if (this.wireType !== wireType) throw new Error(`protobuf: wire type ${this.wireType}, expected ${wireType}`);
  }
}
