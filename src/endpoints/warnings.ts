// Warning headers as k8s.io/apiserver's recorder writes them (filters/warning.go): one header per
// distinct warning, `299 - "<text>"`, texts with control characters dropped, and past 4k runes in all
// each cut to 256 runes. Values are UTF-8 as Go writes them: Node takes header strings as Latin-1, so
// the UTF-8 bytes go in as one Latin-1 character each — a header built here can never make Node throw.

const truncateAtTotalRunes = 4 * 1024;
const truncateItemRunes = 256;

// unicode.IsControl: C0, DEL and C1.
const control = /[\u0000-\u001f\u007f-\u009f]/;

/** The recorder's state machine, run as warnings arrive: once it is truncating and full, more cost nothing. */
export class Warnings {
  private readonly ordered: string[] = [];
  private readonly seen = new Set<string>();
  private out: string[] = [];
  private written = 0;
  private truncating = false;

  /** Upstream's limits by default; smaller ones let the truncation be tested as upstream tests it. */
  constructor(private readonly limits = { totalRunes: truncateAtTotalRunes, itemRunes: truncateItemRunes }) {}

  add(text: string): void {
    if (text === '') return;
    if (this.truncating && this.written >= this.limits.totalRunes) return;
    if (this.seen.has(text)) return;
    this.seen.add(text);
    this.ordered.push(text);
    const t = this.truncating ? this.cut(text) : text;
    if (control.test(t)) return; // NewWarningHeader refuses it
    if (this.truncating || this.written + runes(t) <= this.limits.totalRunes) {
      this.written += runes(t);
      this.out.push(warningHeader(t));
      return;
    }
    // Over the total: start again with every warning so far cut to 256 runes.
    this.truncating = true;
    this.written = 0;
    this.out = [];
    for (const w of this.ordered.map((x) => this.cut(x))) {
      if (control.test(w)) continue;
      this.written += runes(w);
      this.out.push(warningHeader(w));
    }
  }

  addAll(texts: Iterable<string>): void {
    for (const t of texts) this.add(t);
  }

  get size(): number { return this.out.length; }

  private cut(t: string): string {
    return runes(t) > this.limits.itemRunes ? [...t].slice(0, this.limits.itemRunes).join('') : t;
  }

  /** The Warning header values, in the order added. */
  headers(): string[] {
    return [...this.out];
  }
}

const runes = (t: string) => [...t].length; // utf8.RuneCountInString

function warningHeader(text: string): string {
  return headerSafe(`299 - "${text.replace(/["\\]/g, (c) => `\\${c}`)}"`);
}

/** A header value carrying UTF-8 bytes through Node's Latin-1 header encoding. */
export function headerSafe(value: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u007f]*$/.test(value) ? value : Buffer.from(value, 'utf8').toString('latin1');
}
