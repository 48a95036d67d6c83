// Accepted request signatures of an LMDB store (src/services/request-signing.ts), kept in the store so that
// a restart inside the timestamp window does not make a captured request acceptable again. The key is the
// caller's identity of what was signed; the value is when the entry may be forgotten (epoch ms).
import type { Database, RootDatabase } from 'lmdb';
import type { ReplayCache } from '../interfaces';

export const REQUEST_SIGNATURES_DB = 'request-signatures';

/** Expired entries are removed at most this often, off the request's path. */
const PRUNE_INTERVAL_MS = 60_000;

export class RequestSignatureRepository implements ReplayCache {
  private readonly db: Database<number, string>;
  private lastPrune = 0;

  constructor(root: RootDatabase) {
    this.db = root.openDB<number, string>({ name: REQUEST_SIGNATURES_DB });
  }

  /** True once the claim is committed; false when the same id is held and has not expired. */
  async claim(id: string, now: Date, until: Date): Promise<boolean> {
    const t = now.getTime();
    // Check and write in one write transaction: two claims of one id cannot both see it free.
    const claimed = await this.db.transaction(() => {
      const held = this.db.get(id);
      if (held !== undefined && held > t) return false;
      this.db.put(id, until.getTime());
      return true;
    });
    if (t - this.lastPrune >= PRUNE_INTERVAL_MS) {
      this.lastPrune = t;
      this.prune(now).catch(() => undefined);  // housekeeping: a failure here refuses nothing
    }
    return claimed;
  }

  async prune(now: Date): Promise<number> {
    const t = now.getTime();
    return this.db.transaction(() => {
      const expired = [...this.db.getRange()].filter(({ value }) => value <= t).map(({ key }) => key);
      for (const key of expired) this.db.remove(key);
      return expired.length;
    });
  }
}
