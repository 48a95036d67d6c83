// The API keys' request counters per UTC day in PostgreSQL, shared by the nodes; the counting in memory and
// the writes every few seconds are ../key-usage-counter.ts's.
import type { KeyUsageRows } from '../key-usage-counter';
import type { KeyUsageDay, KeyUsageEntry } from '../records';
import { allRowsByKey } from './keyset';
import type { Db } from './pool';

export class PgKeyUsageRows implements KeyUsageRows {
  constructor(private readonly db: Db) {}

  async add(counts: readonly KeyUsageEntry[]): Promise<void> {
    await this.db.query(`INSERT INTO key_usage AS u (key_id, day, requests)
      SELECT k, d, n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(k, d, n)
      ON CONFLICT (key_id, day) DO UPDATE SET requests = u.requests + EXCLUDED.requests`,
    [counts.map((c) => c.keyId), counts.map((c) => c.day), counts.map((c) => c.requests)]);
  }

  async range(keyId: string, fromDay: string, toDay: string): Promise<KeyUsageDay[]> {
    const { rows } = await this.db.query<{ day: string; requests: string }>(
      'SELECT day, requests FROM key_usage WHERE key_id = $1 AND day >= $2 AND day <= $3', [keyId, fromDay, toDay]);
    return rows.map((r) => ({ day: r.day, requests: Number(r.requests) }));
  }

  async entries(): Promise<KeyUsageEntry[]> {
    const rows = await allRowsByKey<{ key_id: string; day: string; requests: string }>(this.db, 'key_usage', 'key_id, day, requests',
      ['key_id', 'day']);
    return rows.map((r) => ({ keyId: r.key_id, day: r.day, requests: Number(r.requests) }));
  }

  async importCounts(entries: readonly KeyUsageEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const { rowCount } = await this.db.query(`INSERT INTO key_usage AS u (key_id, day, requests)
      SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
      ON CONFLICT (key_id, day) DO UPDATE SET requests = EXCLUDED.requests WHERE u.requests < EXCLUDED.requests`,
    [entries.map((e) => e.keyId), entries.map((e) => e.day), entries.map((e) => e.requests)]);
    return rowCount ?? 0;
  }
}
