// Newline-delimited streams (watch events, `kubectl get -w` output) cut into lines as chunks
// arrive: the one splitter every watch consumer in src, test and bench shares.
import { StringDecoder } from 'node:string_decoder';

/**
 * Feed it a stream's chunks in order; it hands back each line once its '\n' has arrived, without
 * the '\n'. Lines are not trimmed and empty lines are kept ("\r" too: kube-apiserver sends "\n"
 * only), so each caller keeps its own rule for them. Buffer chunks may split a UTF-8 character;
 * give one reader either Buffers or already-decoded strings, not both.
 */
export class LineReader {
  private readonly decoder = new StringDecoder('utf8');
  /** The start of the unfinished line, kept as parts so a long line is not copied per chunk. */
  private pending: string[] = [];

  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    let nl = text.indexOf('\n');
    if (nl < 0) {
      if (text !== '') this.pending.push(text);
      return [];
    }
    const lines = [this.finish(text.slice(0, nl))];
    let start = nl + 1;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      lines.push(text.slice(start, nl));
      start = nl + 1;
    }
    if (start < text.length) this.pending.push(text.slice(start));
    return lines;
  }

  /** At the end of the stream: the last line if it had no '\n' (none if it was empty). */
  end(): string[] {
    const tail = this.finish(this.decoder.end());
    return tail === '' ? [] : [tail];
  }

  private finish(last: string): string {
    if (this.pending.length === 0) return last;
    this.pending.push(last);
    const line = this.pending.join('');
    this.pending = [];
    return line;
  }
}
