// The service's response-signing key pair in PostgreSQL: made by the first node that needs it, the private
// key sealed (place ["service-keys", name], as in LMDB) before it is written; every node reads the same pair.
import { generateRsaKeyPair, SERVICE_KEYS_DB, type ServiceKeyPair } from '../records';
import type { Sealer } from '../crypto/sealer';
import type { AsyncServiceKeyRepository } from '../interfaces';
import type { Db } from './pool';

const RESPONSE_SIGNING = 'response-signing';

interface ServiceKeyRow {
  sealed_private_key: Buffer;
  public_key: string;
  created: Date;
}

export class PgServiceKeyRepository implements AsyncServiceKeyRepository {
  constructor(private readonly db: Db, private readonly sealer: Sealer) {}

  async responseSigning(): Promise<ServiceKeyPair> {
    const existing = await this.read(RESPONSE_SIGNING);
    if (existing) return existing;
    const { privateKey, publicKey } = await generateRsaKeyPair();
    const sealed = this.sealer.seal(SERVICE_KEYS_DB, RESPONSE_SIGNING, Buffer.from(privateKey, 'utf8'));
    // Two nodes making one at once: the first insert stays and both read it.
    await this.db.query(`INSERT INTO service_keys (name, sealed_private_key, public_key, created) VALUES ($1, $2, $3, $4)
      ON CONFLICT (name) DO NOTHING`, [RESPONSE_SIGNING, sealed, publicKey, new Date().toISOString()]);
    const stored = await this.read(RESPONSE_SIGNING);
    if (!stored) throw new Error('storage: the response-signing key vanished right after it was written');
    return stored;
  }

  async importResponseSigning(pair: ServiceKeyPair): Promise<ServiceKeyPair> {
    const sealed = this.sealer.seal(SERVICE_KEYS_DB, RESPONSE_SIGNING, Buffer.from(pair.privateKey, 'utf8'));
    await this.db.query(`INSERT INTO service_keys (name, sealed_private_key, public_key, created) VALUES ($1, $2, $3, $4)
      ON CONFLICT (name) DO NOTHING`, [RESPONSE_SIGNING, sealed, pair.publicKey, pair.created]);
    const stored = await this.read(RESPONSE_SIGNING);
    if (!stored) throw new Error('storage: the response-signing key vanished right after it was written');
    return stored;
  }

  private async read(name: string): Promise<ServiceKeyPair | undefined> {
    const { rows } = await this.db.query<ServiceKeyRow>(
      'SELECT sealed_private_key, public_key, created FROM service_keys WHERE name = $1', [name]);
    const r = rows[0];
    if (!r) return undefined;
    const privateKey = this.sealer.open(SERVICE_KEYS_DB, name, r.sealed_private_key).toString('utf8');
    return { privateKey, publicKey: r.public_key, created: r.created.toISOString() };
  }
}
