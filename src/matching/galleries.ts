// One gallery per account, so a search can only ever see its own account's persons. By default each is
// a collection of the native SIMD index; ScanGallery (plain TypeScript) remains for tests of the rules.
// Galleries.forStore backs each account's index with the store's template rows: the index keeps only int8
// codes and re-ranks its candidates with the stored float32 templates, and it starts from snapshots
// (./snapshot/restore.ts) instead of re-encoding every template.
import crypto from 'node:crypto';

import type { Gallery } from './gallery';
import { IndexGallery } from './index-gallery';
import type { LocalPersonRepository as PersonRepository } from '../storage/interfaces';
import type { TemplateBlock } from '../storage/records';
import { restoreGalleries, type RestoreOptions, type RestoreReport } from './snapshot/restore';
import type { SnapshotPlace } from './snapshot/place';

export type GalleryFactory = (accountId: string) => Gallery;

export class Galleries {
  private readonly byAccount = new Map<string, Gallery>();
  private readonly instance = crypto.randomUUID();
  private layout: string | undefined;

  /**
   * Galleries whose indexes keep int8 codes only and read exact templates from the store's rows; they can
   * export and import snapshots.
   */
  static forStore(persons: PersonRepository): Galleries {
    const galleries: Galleries = new Galleries((accountId) =>
      new IndexGallery(`${galleries.instance}/${accountId}`, (ids) => persons.templatesOf(accountId, ids)), { importsCodes: true });
    return galleries;
  }

  /** Whether the galleries can import snapshots (only indexes with a template source can: forStore). */
  readonly importsCodes: boolean;

  constructor(private readonly factory: GalleryFactory = (accountId) => new IndexGallery(`${this.instance}/${accountId}`),
    options: { importsCodes?: boolean } = {}) {
    this.importsCodes = options.importsCodes ?? false;
  }

  /** The account's gallery, created empty on first use. */
  of(accountId: string): Gallery {
    let g = this.byAccount.get(accountId);
    if (!g) {
      g = this.factory(accountId);
      this.byAccount.set(accountId, g);
    }
    return g;
  }

  /** The account's gallery if it has one (never creates it). */
  existing(accountId: string): Gallery | undefined {
    return this.byAccount.get(accountId);
  }

  /** Persons per account with a gallery (read-only: metrics must not create galleries). */
  sizes(): Map<string, number> {
    return new Map([...this.byAccount].map(([accountId, g]) => [accountId, g.size]));
  }

  /**
   * The index's code layout (CodeDump.layout), from a one-row probe collection: a snapshot of another layout
   * is not read at all.
   */
  async codeLayout(): Promise<string | undefined> {
    if (this.layout === undefined) {
      const probe = new IndexGallery(`${this.instance}/\u0000layout-probe`, () => []);
      try {
        await probe.upsert('probe', Float32Array.of(1));
        this.layout = (await probe.exportCodes())?.layout;
      } finally {
        probe.drop();
      }
    }
    return this.layout;
  }

  /**
   * Loads every account's gallery of `modelId`: from its snapshot in `place` when one fits, else from the
   * store (./snapshot/restore.ts). Templates of another model are skipped and counted in `stale`.
   */
  restore(persons: PersonRepository, modelId: string, place: SnapshotPlace | undefined, options: RestoreOptions = {}): Promise<RestoreReport> {
    return restoreGalleries(this, persons, modelId, place, options);
  }

  /**
   * Loads every stored template of `modelId`. Templates of another model cannot be compared and are
   * skipped: they are reported so the operator runs `face-check reindex`.
   */
  async rebuild(persons: PersonRepository, modelId: string, options: { blockSize?: number } = {}): Promise<{ loaded: number; stale: number }> {
    this.close();
    const loaded = await this.loadBlocks(persons.templateBlocks(modelId), persons.count(), options.blockSize);
    return { loaded, stale: persons.count() - loaded };
  }

  /** Rebuilds the named accounts' galleries from the store (emptied first); returns the persons loaded. */
  async rebuildAccounts(persons: PersonRepository, modelId: string, accountIds: readonly string[], options: { blockSize?: number } = {}): Promise<number> {
    const accounts = [...new Set(accountIds)];
    for (const accountId of accounts) this.drop(accountId);
    const size = accounts.reduce((n, a) => n + persons.templateCount(modelId, a), 0);
    return this.loadBlocks(persons.templateBlocksOf(modelId, accounts), size, options.blockSize);
  }

  /**
   * Copies the stored segments into blocks of 16k templates; while the addon encodes one block, the next is
   * read (two buffers). The first block of an account clears its gallery.
   */
  private async loadBlocks(source: Iterable<TemplateBlock>, total: number, blockSize = 16384): Promise<number> {
    // 16k templates (32 MB) per block: larger blocks measured no faster and cost more transient memory.
    // A small gallery needs a smaller buffer: the buffers' memory stays with the process until it is collected.
    const BLOCK = Math.min(blockSize, Math.max(1, total));
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

    for (const block of source) {
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
    return loaded;
  }

  /** Releases one account's gallery (its native collection included). */
  drop(accountId: string): void {
    const g = this.byAccount.get(accountId);
    if (g instanceof IndexGallery) g.drop();
    this.byAccount.delete(accountId);
  }

  /**
   * Takes over `other`'s galleries in one step and releases this instance's previous ones: a rebuild fills
   * new galleries while searches keep using the old, then swaps. `other` is left empty.
   */
  adopt(other: Galleries): void {
    const previous = [...this.byAccount.values()];
    this.byAccount.clear();
    for (const [accountId, g] of other.byAccount) this.byAccount.set(accountId, g);
    other.byAccount.clear();
    for (const g of previous) if (g instanceof IndexGallery) g.drop();
  }

  /** Releases every account's gallery (native collections included). */
  close(): void {
    for (const g of this.byAccount.values()) if (g instanceof IndexGallery) g.drop();
    this.byAccount.clear();
  }
}
