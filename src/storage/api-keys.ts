// API keys, stored by the SHA-256 of the key: the key itself is shown once at creation and never stored.
import crypto from 'node:crypto';
import type { Database, RootDatabase } from 'lmdb';
import type { Role } from '../domain/roles';

export interface ApiKeyRecord {
  /** Public identifier (first 12 hex digits of the hash), used to list and revoke. */
  keyId: string;
  accountId: string;
  role: Role;
  label: string;
  created: string;
  /** When revoked, else null. */
  revoked: string | null;
  /**
   * The client's RSA public key (PEM, SubjectPublicKeyInfo) for enterprise request signing (spec 5): when
   * set, every request made with this key must carry a valid Signature. Absent on keys made without one.
   */
  signingPublicKey?: string;
}

export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A fresh key: "fc_" + 32 base64url characters (192 random bits). */
export function generateKey(): string {
  return `fc_${crypto.randomBytes(24).toString('base64url')}`;
}

export class ApiKeyRepository {
  private readonly db: Database<ApiKeyRecord, string>;

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

  /** Marks the key revoked; false when no key has that id. Revoked keys stay listed (audit). */
  async revoke(keyId: string, now: string): Promise<boolean> {
    const entry = [...this.db.getRange()].find(({ value }) => value.keyId === keyId);
    if (!entry) return false;
    if (entry.value.revoked === null) await this.db.put(entry.key, { ...entry.value, revoked: now });
    return true;
  }

  isEmpty(): boolean {
    return this.db.getCount() === 0;
  }
}
