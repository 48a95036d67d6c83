// Operators' sign-in sessions. The token itself is never stored: the key is its SHA-256 (hex), so a copy of
// the store does not hold a usable session. The service (src/licensing/accounts.ts) decides expiry; this file
// only keeps the records.
import crypto from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';

export const SESSIONS_DB = 'sessions';

export interface SessionRecord {
  accountId: string;
  created: string;
  /** Last use, written at most once a second (TOUCH_INTERVAL_MS): a burst of requests costs one write. */
  lastSeen: string;
  /** The absolute end, whatever the use. */
  expires: string;
}

/** How stale lastSeen may get before a use writes it again. */
export const TOUCH_INTERVAL_MS = 1_000;

/**
 * When a session unused since `lastSeen` ends: idle expiry is exact to the second. lastSeen may lag the last
 * use by up to TOUCH_INTERVAL_MS, so that lag is added: a session never ends before `idleMs` unused, and at
 * most a second after.
 */
export function idleEndMs(lastSeen: string, idleMs: number): number {
  return Date.parse(lastSeen) + idleMs + TOUCH_INTERVAL_MS;
}

export function hashSessionToken(token: string): string {
  return crypto.createHash('sha256').update(token, 'utf8').digest('hex');
}

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
