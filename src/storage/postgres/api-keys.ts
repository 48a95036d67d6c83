// API keys in PostgreSQL, by the SHA-256 of the key (the key is shown once and never stored).
import { type ApiKeyRecord, generateKey, hashKey, LAST_USED_INTERVAL_MS, lastUseDue } from '../records';
import type { Role } from '../../domain/roles';
import type { AsyncApiKeyRepository } from '../interfaces';
import type { Db } from './pool';
import { iso, isoOrNull } from './rows';

interface ApiKeyRow {
  key_id: string;
  account_id: string;
  role: Role;
  label: string;
  created: Date;
  revoked: Date | null;
  signing_public_key: string | null;
  last_used: Date | null;
}

const COLUMNS = 'key_id, account_id, role, label, created, revoked, signing_public_key, last_used';

function recordOf(r: ApiKeyRow): ApiKeyRecord {
  const record: ApiKeyRecord = { keyId: r.key_id, accountId: r.account_id, role: r.role, label: r.label,
    created: iso(r.created), revoked: isoOrNull(r.revoked) };
  if (r.signing_public_key !== null) record.signingPublicKey = r.signing_public_key;
  if (r.last_used !== null) record.lastUsed = iso(r.last_used);
  return record;
}

/**
 * How long a node answers a known key's lookups from memory. A revocation made on another node therefore stops
 * the key here within this bound (one made on this node at once); a key's first use, and any unknown key, is
 * always read, so a key created on any node works everywhere at once. Every authenticated request reads its
 * key, so without this a busy key costs a round trip per request.
 */
export const KEY_LOOKUP_CACHE_MS = 1_000;
/** Keys held at most; past it the expired ones are dropped, then all (the next uses read again). */
const KEY_LOOKUP_CACHE_SIZE = 10_000;

export class PgApiKeyRepository implements AsyncApiKeyRepository {
  /** keyId -> when this node last wrote its lastUsed (ms): most uses then cost no statement at all. */
  private readonly lastUseWritten = new Map<string, number>();
  /** SHA-256 of the key -> its record as read, and until when (performance.now()) it may be answered. */
  private readonly recent = new Map<string, { record: ApiKeyRecord; until: number }>();
  /** Raised by each change this node makes: a lookup read before it is answered but not held. */
  private changes = 0;

  constructor(private readonly db: Db) {}

  async create(accountId: string, role: Role, label: string, now: string, signingPublicKey?: string):
    Promise<{ key: string; record: ApiKeyRecord }> {
    const key = generateKey();
    const hash = hashKey(key);
    const record: ApiKeyRecord = { keyId: hash.slice(0, 12), accountId, role, label, created: now, revoked: null };
    if (signingPublicKey) record.signingPublicKey = signingPublicKey;
    await this.db.query(`INSERT INTO api_keys (key_sha256, key_id, account_id, role, label, created, signing_public_key)
      VALUES ($1, $2, $3, $4, $5, $6, $7)`, [hash, record.keyId, accountId, role, label, now, signingPublicKey ?? null]);
    return { key, record };
  }

  async entries(): Promise<Array<{ keySha256: string; record: ApiKeyRecord }>> {
    const { rows } = await this.db.query<ApiKeyRow & { key_sha256: string }>(`SELECT key_sha256, ${COLUMNS} FROM api_keys ORDER BY created`);
    return rows.map((r) => ({ keySha256: r.key_sha256, record: recordOf(r) }));
  }

  async importEntry(keySha256: string, record: ApiKeyRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(`INSERT INTO api_keys
      (key_sha256, key_id, account_id, role, label, created, revoked, signing_public_key, last_used)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (key_sha256) DO NOTHING`,
    [keySha256, record.keyId, record.accountId, record.role, record.label, record.created, record.revoked,
      record.signingPublicKey ?? null, record.lastUsed ?? null]);
    return (rowCount ?? 0) > 0;
  }

  async lookup(key: string): Promise<ApiKeyRecord | undefined> {
    const hash = hashKey(key);
    const t = performance.now();
    const held = this.recent.get(hash);
    if (held && held.until > t) return { ...held.record };
    const seen = this.changes;
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE key_sha256 = $1`, [hash], 'face_check_key_lookup');
    const record = rows[0] && recordOf(rows[0]);
    if (record && seen === this.changes) this.hold(hash, record, t + KEY_LOOKUP_CACHE_MS);
    else this.recent.delete(hash);
    return record;
  }

  private hold(hash: string, record: ApiKeyRecord, until: number): void {
    if (this.recent.size >= KEY_LOOKUP_CACHE_SIZE && !this.recent.has(hash)) {
      const t = performance.now();
      for (const [h, e] of this.recent) if (e.until <= t) this.recent.delete(h);
      if (this.recent.size >= KEY_LOOKUP_CACHE_SIZE) this.recent.clear();
    }
    this.recent.set(hash, { record, until });
  }

  async list(): Promise<ApiKeyRecord[]> {
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created, key_id`);
    return rows.map(recordOf);
  }

  async recordUse(key: string, now: Date): Promise<void> {
    const hash = hashKey(key);
    if (!lastUseDue(this.lastUseWritten, hash.slice(0, 12), now)) return;
    // The condition keeps nodes from each writing it within the same minute; a revocation is untouched.
    await this.db.query(`UPDATE api_keys SET last_used = $2 WHERE key_sha256 = $1
      AND (last_used IS NULL OR last_used <= $2::timestamptz - make_interval(secs => $3))`,
    [hash, now.toISOString(), LAST_USED_INTERVAL_MS / 1000]);
    // The held record's lastUsed is now stale: the next lookup reads it (at most once a minute per key).
    this.changes++;
    this.recent.delete(hash);
  }

  async revoke(keyId: string, now: string, accountId?: string): Promise<boolean> {
    const { rows } = await this.db.query(`UPDATE api_keys SET revoked = coalesce(revoked, $2)
      WHERE key_sha256 = (SELECT key_sha256 FROM api_keys WHERE key_id = $1 AND ($3::text IS NULL OR account_id = $3)
                          ORDER BY created LIMIT 1)
      RETURNING 1`, [keyId, now, accountId ?? null]);
    // This node refuses the key from now on; the others within KEY_LOOKUP_CACHE_MS.
    this.changes++;
    for (const [h, e] of this.recent) if (e.record.keyId === keyId) this.recent.delete(h);
    return rows.length > 0;
  }

  async isEmpty(): Promise<boolean> {
    const { rows } = await this.db.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any');
    return !rows[0].any;
  }
}
