// Operators' sign-in sessions. The token itself is never stored: the key is its SHA-256 (hex), so a copy of
// the store does not hold a usable session. The service (src/accounts/accounts.ts) decides expiry; this file
// only keeps the records.
import type { Database, RootDatabase } from 'lmdb';
import { idleEndMs, type SessionRecord, TOUCH_INTERVAL_MS } from '../records';

export const SESSIONS_DB = 'sessions';

export class SessionRepository {
  private readonly db: Database<SessionRecord, string>;

  constructor(root: RootDatabase) {
    this.db = root.openDB<SessionRecord, string>({ name: SESSIONS_DB });
  }

  async create(tokenHash: string, record: SessionRecord): Promise<void> {
    await this.db.put(tokenHash, record);
  }

  get(tokenHash: string): SessionRecord | undefined {
    return this.db.get(tokenHash);
  }

  /** Records a use at `now` unless lastSeen is less than TOUCH_INTERVAL_MS old (or the session is gone). */
  async touch(tokenHash: string, now: Date): Promise<void> {
    const current = this.db.get(tokenHash);
    if (!current || now.getTime() - Date.parse(current.lastSeen) < TOUCH_INTERVAL_MS) return;
    await this.db.transaction(() => {
      // Re-read inside the write: a sign-out between the two must not be undone.
      const latest = this.db.get(tokenHash);
      if (latest) this.db.put(tokenHash, { ...latest, lastSeen: now.toISOString() });
    });
  }

  async delete(tokenHash: string): Promise<boolean> {
    return this.db.remove(tokenHash);
  }

  /**
   * Ends every session of the account except `exceptHash` (the caller's own); returns how many ended. A scan:
   * sessions are few (expired ones are purged), and this runs on a password change, not per request.
   */
  async deleteAllOf(accountId: string, exceptHash?: string): Promise<number> {
    return this.removeWhere((key, value) => value.accountId === accountId && key !== exceptHash);
  }

  /** Removes sessions past their absolute end or unused for `idleMs`; returns how many. */
  async purgeExpired(now: Date, idleMs: number): Promise<number> {
    const t = now.getTime();
    return this.removeWhere((_key, value) => Date.parse(value.expires) <= t || idleEndMs(value.lastSeen, idleMs) <= t);
  }

  /** Keys are collected before removal: a cursor is not walked while its database changes under it. */
  private async removeWhere(matches: (key: string, value: SessionRecord) => boolean): Promise<number> {
    return this.db.transaction(() => {
      const doomed = [...this.db.getRange()].filter(({ key, value }) => matches(key, value)).map(({ key }) => key);
      for (const key of doomed) this.db.remove(key);
      return doomed.length;
    });
  }

  count(): number {
    return this.db.getCount();
  }
}
