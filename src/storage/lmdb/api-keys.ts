// API keys, stored by the SHA-256 of the key: the key itself is shown once at creation and never stored.
import type { Database, RootDatabase } from 'lmdb';
import type { Role } from '../../domain/roles';
import { type ApiKeyRecord, generateKey, hashKey, lastUseDue } from '../records';

export class ApiKeyRepository {
  private readonly db: Database<ApiKeyRecord, string>;
  /** keyId -> when its lastUsed was last written (ms), kept between writes. */
  private readonly lastUseWritten = new Map<string, number>();

  constructor(root: RootDatabase) {
    this.db = root.openDB<ApiKeyRecord, string>({ name: 'api-keys' });
  }

  /** Creates a key and returns it in clear (the only time it exists in clear). */
  async create(accountId: string, role: Role, label: string, now: string,
    signingPublicKey?: string): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateKey();
    const hash = hashKey(key);
    const record: ApiKeyRecord = { keyId: hash.slice(0, 12), accountId, role, label, created: now, revoked: null };
    if (signingPublicKey) record.signingPublicKey = signingPublicKey;
    await this.db.put(hash, record);
    return { key, record };
  }

  lookup(key: string): ApiKeyRecord | undefined {
    return this.db.get(hashKey(key));
  }

  list(): ApiKeyRecord[] {
    return [...this.db.getRange()].map(({ value }) => value).sort((a, b) => a.created.localeCompare(b.created));
  }

  /** Records that `key` authenticated at `now`, unless its lastUsed was written less than a minute before. */
  async recordUse(key: string, now: Date): Promise<void> {
    const hash = hashKey(key);
    if (!lastUseDue(this.lastUseWritten, hash.slice(0, 12), now)) return;
    await this.db.transaction(() => {
      // Read inside the write: a revocation made meanwhile is kept.
      const current = this.db.get(hash);
      if (current) this.db.put(hash, { ...current, lastUsed: now.toISOString() });
    });
  }

  /**
   * Marks the key revoked; false when no key has that id (of `accountId`, when given). Revoked keys stay
   * listed (audit).
   */
  async revoke(keyId: string, now: string, accountId?: string): Promise<boolean> {
    const entry = [...this.db.getRange()]
      .find(({ value }) => value.keyId === keyId && (accountId === undefined || value.accountId === accountId));
    if (!entry) return false;
    if (entry.value.revoked === null) await this.db.put(entry.key, { ...entry.value, revoked: now });
    return true;
  }

  isEmpty(): boolean {
    return this.db.getCount() === 0;
  }

  /** Every key by the SHA-256 it is stored under (moving a store: face-check migrate). */
  entries(): Array<{ keySha256: string; record: ApiKeyRecord }> {
    return [...this.db.getRange()].map(({ key, value }) => ({ keySha256: key, record: value }));
  }

  /** Stores a key moved from another store unless its hash is present; true when written. */
  async importEntry(keySha256: string, record: ApiKeyRecord): Promise<boolean> {
    return this.db.ifNoExists(keySha256, () => { this.db.put(keySha256, record); });
  }
}
