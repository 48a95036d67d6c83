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

  /**
   * Loads every stored template of `modelId`. Templates of another model cannot be compared and are
   * skipped: they are reported so the operator runs `face-check reindex`.
   */
  async rebuild(persons: PersonRepository, modelId: string): Promise<{ loaded: number; stale: number }> {
    this.close();
    // Group by account, then one bulk load per account: no per-person round trip into the index.
    const byAccount = new Map<string, { ids: string[]; templates: Float32Array[] }>();
    let stale = 0;
    for (const p of persons.all()) {
      if (p.modelId !== modelId) {
        stale++;
        continue;
      }
      let group = byAccount.get(p.accountId);
      if (!group) byAccount.set(p.accountId, (group = { ids: [], templates: [] }));
      group.ids.push(p.personId);
      group.templates.push(p.template);
    }
    let loaded = 0;
    for (const [accountId, { ids, templates }] of byAccount) {
      const gallery = this.of(accountId);
      const dimension = templates[0].length;
      if (gallery instanceof IndexGallery) {
        const flat = new Float32Array(ids.length * dimension);
        templates.forEach((t, i) => flat.set(t, i * dimension));
        await gallery.load(ids, flat, dimension);
      } else {
        for (let i = 0; i < ids.length; i++) await gallery.upsert(ids[i], templates[i]);
      }
      loaded += ids.length;
    }
    return { loaded, stale };
  }

  /** Releases every account's gallery (native collections included). */
  close(): void {
    for (const g of this.byAccount.values()) if (g instanceof IndexGallery) g.drop();
    this.byAccount.clear();
  }
}
