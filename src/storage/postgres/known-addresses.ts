// The client addresses an account signed in from, in PostgreSQL (schema 6): every node sees an address the
// owner used on another, and a restart forgets none. The latest `keep` per account are kept.
import type { AsyncKnownAddressRepository } from '../interfaces';
import type { Db } from './pool';

export class PgKnownAddressRepository implements AsyncKnownAddressRepository {
  constructor(private readonly db: Db) {}

  async isKnown(accountId: string, address: string): Promise<boolean> {
    const { rows } = await this.db.query('SELECT 1 FROM known_sign_in_addresses WHERE account_id = $1 AND address = $2',
      [accountId, address]);
    return rows.length > 0;
  }

  async remember(accountId: string, address: string, at: Date, keep: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO known_sign_in_addresses (account_id, address, last_seen) VALUES ($1, $2, $3)
        ON CONFLICT (account_id, address) DO UPDATE SET last_seen = greatest(known_sign_in_addresses.last_seen, EXCLUDED.last_seen)`,
      [accountId, address, at.toISOString()]);
      await tx.query(`DELETE FROM known_sign_in_addresses WHERE account_id = $1 AND address NOT IN (
        SELECT address FROM known_sign_in_addresses WHERE account_id = $1 ORDER BY last_seen DESC, address LIMIT $2)`,
      [accountId, keep]);
    }, { retries: 2 });
  }
}
