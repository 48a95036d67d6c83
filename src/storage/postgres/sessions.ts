// Operators' sign-in sessions in PostgreSQL, by the SHA-256 of the token (a copy of the table holds no usable
// session). Expiry is the service's decision; this only keeps the records.
import { TOUCH_INTERVAL_MS, type SessionRecord } from '../records';
import type { AsyncSessionRepository } from '../interfaces';
import type { Db } from './pool';
import { iso } from './rows';

interface SessionRow {
  account_id: string;
  created: Date;
  last_seen: Date;
  expires: Date;
}

function recordOf(r: SessionRow): SessionRecord {
  return { accountId: r.account_id, created: iso(r.created), lastSeen: iso(r.last_seen), expires: iso(r.expires) };
}

export class PgSessionRepository implements AsyncSessionRepository {
  constructor(private readonly db: Db) {}

  async create(tokenHash: string, record: SessionRecord): Promise<void> {
    await this.db.query(`INSERT INTO sessions (token_sha256, account_id, created, last_seen, expires) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (token_sha256) DO UPDATE SET account_id = EXCLUDED.account_id, created = EXCLUDED.created,
        last_seen = EXCLUDED.last_seen, expires = EXCLUDED.expires`,
    [tokenHash, record.accountId, record.created, record.lastSeen, record.expires]);
  }

  async get(tokenHash: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.db.query<SessionRow>(
      'SELECT account_id, created, last_seen, expires FROM sessions WHERE token_sha256 = $1', [tokenHash]);
    return rows[0] && recordOf(rows[0]);
  }

  async touch(tokenHash: string, now: Date): Promise<void> {
    // One statement: a sign-out meanwhile leaves no row to update, and a fresh lastSeen is not rewritten.
    // The purge below and the service's idleEndMs allow for the interval.
    await this.db.query(`UPDATE sessions SET last_seen = $2 WHERE token_sha256 = $1
      AND last_seen <= $2::timestamptz - make_interval(secs => $3)`, [tokenHash, now.toISOString(), TOUCH_INTERVAL_MS / 1000]);
  }

  async delete(tokenHash: string): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM sessions WHERE token_sha256 = $1', [tokenHash]);
    return (rowCount ?? 0) > 0;
  }

  async deleteAllOf(accountId: string, exceptHash?: string): Promise<number> {
    const { rowCount } = await this.db.query(
      'DELETE FROM sessions WHERE account_id = $1 AND ($2::text IS NULL OR token_sha256 <> $2)', [accountId, exceptHash ?? null]);
    return rowCount ?? 0;
  }

  async purgeExpired(now: Date, idleMs: number): Promise<number> {
    const { rowCount } = await this.db.query(`DELETE FROM sessions
      WHERE expires <= $1 OR last_seen + make_interval(secs => $2) <= $1`, [now.toISOString(), (idleMs + TOUCH_INTERVAL_MS) / 1000]);
    return rowCount ?? 0;
  }

  async count(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM sessions');
    return Number(rows[0].n);
  }
}
