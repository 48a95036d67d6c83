// One gallery per account, so a search can only ever see its own account's persons.
import { ScanGallery, type Gallery } from './gallery';
import type { PersonRepository } from '../storage/persons';

export type GalleryFactory = (accountId: string) => Gallery;

export class Galleries {
  private readonly byAccount = new Map<string, Gallery>();

  constructor(private readonly factory: GalleryFactory = () => new ScanGallery()) {}

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
    this.byAccount.clear();
    let loaded = 0;
    let stale = 0;
    for (const p of persons.all()) {
      if (p.modelId !== modelId) {
        stale++;
        continue;
      }
      await this.of(p.accountId).upsert(p.personId, p.template);
      loaded++;
    }
    return { loaded, stale };
  }
}
