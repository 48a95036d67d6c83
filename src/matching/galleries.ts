// One gallery per account, so a search can only ever see its own account's persons. By default each is
// a collection of the native SIMD index; ScanGallery (plain TypeScript) remains for tests of the rules.
import crypto from 'node:crypto';

import type { Gallery } from './gallery';
import { IndexGallery } from './index-gallery';
import type { PersonRepository } from '../storage/persons';

export type GalleryFactory = (accountId: string) => Gallery;

export class Galleries {
  private readonly byAccount = new Map<string, Gallery>();
  private readonly instance = crypto.randomUUID();

  constructor(private readonly factory: GalleryFactory = (accountId) => new IndexGallery(`${this.instance}/${accountId}`)) {}

  /** The account's gallery, created empty on first use. */
  of(accountId: string): Gallery {
    let g = this.byAccount.get(accountId);
    if (!g) {
      g = this.factory(accountId);
      this.byAccount.set(accountId, g);
    }
    return g;
  }

  /** Persons per account with a gallery (read-only: metrics must not create galleries). */
  sizes(): Map<string, number> {
    return new Map([...this.byAccount].map(([accountId, g]) => [accountId, g.size]));
  }

  /**
   * Loads every stored template of `modelId`. Templates of another model cannot be compared and are
   * skipped: they are reported so the operator runs `face-check reindex`. The stored segments are copied
   * into blocks of 16k templates; while the addon encodes one block, the next is read (two buffers).
   */
  async rebuild(persons: PersonRepository, modelId: string, options: { blockSize?: number } = {}): Promise<{ loaded: number; stale: number }> {
    this.close();
    // 16k templates (32 MB) per block: larger blocks measured no faster and cost more transient memory.
    // A small gallery needs a smaller buffer: the buffers' memory stays with the process until it is collected.
    const BLOCK = Math.min(options.blockSize ?? 16384, Math.max(1, persons.count()));
    const buffers: Float32Array[] = [];
    let which = 0;
    let pending: Promise<void> = Promise.resolve();
    let fill: { accountId: string; dimension: number; ids: string[]; data: Float32Array; bytes: Uint8Array } | undefined;
    const loadedAccounts = new Set<string>();
    let loaded = 0;

    const flush = async () => {
      if (!fill) return;
      const { accountId, dimension, ids } = fill;
      const data = fill.data.subarray(0, ids.length * dimension);
      fill = undefined;
      await pending;  // the other buffer is free again once its load settled
      const gallery = this.of(accountId);
      const clear = !loadedAccounts.has(accountId);
      loadedAccounts.add(accountId);
      loaded += ids.length;
      pending = gallery instanceof IndexGallery
        ? gallery.load(ids, data, dimension, { clear })
        : (async () => { for (let i = 0; i < ids.length; i++) await gallery.upsert(ids[i], data.slice(i * dimension, (i + 1) * dimension)); })();
      which ^= 1;
    };

    for (const block of persons.templateBlocks(modelId)) {
      let bytes = block.bytes;
      if (fill && (fill.accountId !== block.accountId || fill.dimension !== block.dimension ||
        (fill.ids.length + block.ids.length) * block.dimension > fill.data.length)) {
        bytes = Uint8Array.from(bytes);  // a view of LMDB's read buffer must not outlive an await
        await flush();
      }
      if (!fill) {
        const size = Math.max(BLOCK, block.ids.length) * block.dimension;
        if (!buffers[which] || buffers[which].length < size) buffers[which] = new Float32Array(size);
        const data = buffers[which];
        fill = { accountId: block.accountId, dimension: block.dimension, ids: [], data, bytes: new Uint8Array(data.buffer) };
      }
      fill.bytes.set(bytes, fill.ids.length * block.dimension * 4);
      for (const id of block.ids) fill.ids.push(id);
    }
    await flush();
    await pending;
    return { loaded, stale: persons.count() - loaded };
  }

  /** Releases every account's gallery (native collections included). */
  close(): void {
    for (const g of this.byAccount.values()) if (g instanceof IndexGallery) g.drop();
    this.byAccount.clear();
  }
}
