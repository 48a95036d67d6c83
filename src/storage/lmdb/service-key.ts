// The service's own RSA-2048 key pair, made once per store: it signs the responses to signed requests
// (spec 5), and clients verify them with its public key (`face-check keys service-public-key`). The private
// key is stored sealed (./crypto/sealer.ts); the public key and the date are not secret.
import type { Database, RootDatabase } from 'lmdb';
import type { Sealer } from '../crypto/sealer';
import { generateRsaKeyPair, SERVICE_KEYS_DB, type ServiceKeyPair } from '../records';

/** As stored: the PEM private key sealed. */
interface StoredServiceKey {
  sealedPrivateKey: Uint8Array;
  publicKey: string;
  created: string;
}

/** As written before keys were sealed (storage schema 2). */
type PlainServiceKey = ServiceKeyPair;

const RESPONSE_SIGNING = 'response-signing';

export class ServiceKeyRepository {
  private readonly db: Database<StoredServiceKey, string>;

  constructor(root: RootDatabase, private readonly sealer: Sealer) {
    this.db = root.openDB<StoredServiceKey, string>({ name: SERVICE_KEYS_DB });
  }

  /** The response-signing key pair, made and stored on first use (ifNoExists: two processes agree on one). */
  async responseSigning(): Promise<ServiceKeyPair> {
    const existing = this.db.get(RESPONSE_SIGNING);
    if (existing) return this.opened(RESPONSE_SIGNING, existing);
    const { privateKey, publicKey } = await generateRsaKeyPair();
    const stored: StoredServiceKey = {
      sealedPrivateKey: this.sealer.seal(SERVICE_KEYS_DB, RESPONSE_SIGNING, Buffer.from(privateKey, 'utf8')),
      publicKey, created: new Date().toISOString(),
    };
    await this.db.ifNoExists(RESPONSE_SIGNING, () => { this.db.put(RESPONSE_SIGNING, stored); });
    return this.opened(RESPONSE_SIGNING, this.db.get(RESPONSE_SIGNING)!);
  }

  /**
   * Stores a response-signing pair moved from another store unless one is present; returns the pair stored
   * now (the given one, or the one that was there: the caller compares).
   */
  async importResponseSigning(pair: ServiceKeyPair): Promise<ServiceKeyPair> {
    const stored: StoredServiceKey = {
      sealedPrivateKey: this.sealer.seal(SERVICE_KEYS_DB, RESPONSE_SIGNING, Buffer.from(pair.privateKey, 'utf8')),
      publicKey: pair.publicKey, created: pair.created,
    };
    await this.db.ifNoExists(RESPONSE_SIGNING, () => { this.db.put(RESPONSE_SIGNING, stored); });
    return this.opened(RESPONSE_SIGNING, this.db.get(RESPONSE_SIGNING)!);
  }

  /** Seals the private keys stored plain by schema 2 (storage migration); returns how many. */
  async sealPlainKeys(): Promise<number> {
    return this.db.transaction(() => {
      let n = 0;
      for (const { key, value } of this.db.getRange()) {
        const plain = value as unknown as Partial<PlainServiceKey>;
        if (typeof plain.privateKey !== 'string') continue;
        this.db.put(key, {
          sealedPrivateKey: this.sealer.seal(SERVICE_KEYS_DB, key, Buffer.from(plain.privateKey, 'utf8')),
          publicKey: String(plain.publicKey), created: String(plain.created),
        });
        n++;
      }
      return n;
    });
  }

  private opened(name: string, stored: StoredServiceKey): ServiceKeyPair {
    const privateKey = this.sealer.open(SERVICE_KEYS_DB, name, stored.sealedPrivateKey).toString('utf8');
    return { privateKey, publicKey: stored.publicKey, created: stored.created };
  }
}
