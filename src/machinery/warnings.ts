// Warning headers as k8s.io/apiserver's recorder writes them (filters/warning.go): one header per
// distinct warning, `299 - "<text>"`, texts with control characters dropped, and past 4k runes in all
// each cut to 256 runes. Values are UTF-8 as Go writes them: Node takes header strings as Latin-1, so
// the UTF-8 bytes go in as one Latin-1 character each — a header built here can never make Node throw.

const truncateAtTotalRunes = 4 * 1024;
const truncateItemRunes = 256;

// unicode.IsControl: C0, DEL and C1.
const control = /[\u0000-\u001f\u007f-\u009f]/;

export class Warnings {
  private readonly texts: string[] = [];
  private readonly seen = new Set<string>();

  add(text: string): void {
    if (text === '' || this.seen.has(text)) return;
    this.seen.add(text);
    this.texts.push(text);
  }

  addAll(texts: Iterable<string>): void {
    for (const t of texts) this.add(t);
  }

  get size(): number { return this.texts.length; }

  /** The Warning header values, in the order added (the recorder's truncation replayed over them). */
  headers(): string[] {
    const runes = (t: string) => [...t].length;
    const cut = (t: string) => (runes(t) > truncateItemRunes ? [...t].slice(0, truncateItemRunes).join('') : t);
    let out: string[] = [];
    let written = 0;
    let truncating = false;
    for (let i = 0; i < this.texts.length; i++) {
      if (truncating && written >= truncateAtTotalRunes) break;
      const text = truncating ? cut(this.texts[i]) : this.texts[i];
      if (control.test(text)) continue; // NewWarningHeader refuses it
      if (truncating || written + runes(text) <= truncateAtTotalRunes) {
        written += runes(text);
        out.push(warningHeader(text));
        continue;
      }
      // Over the total: start again with every warning so far cut to 256 runes.
      truncating = true;
      written = 0;
      out = [];
      for (const t of this.texts.slice(0, i + 1).map(cut)) {
        if (control.test(t)) continue;
        written += runes(t);
        out.push(warningHeader(t));
      }
    }
    return out;
  }
}

function warningHeader(text: string): string {
  return headerSafe(`299 - "${text.replace(/["\\]/g, (c) => `\\${c}`)}"`);
}

/** A header value carrying UTF-8 bytes through Node's Latin-1 header encoding. */
export function headerSafe(value: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u007f]*$/.test(value) ? value : Buffer.from(value, 'utf8').toString('latin1');
}
