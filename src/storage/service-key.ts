// The service's own RSA-2048 key pair, made once per store: it signs the responses to signed requests
// (spec 5), and clients verify them with its public key (`face-check keys service-public-key`).
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { Database, RootDatabase } from 'lmdb';

export interface ServiceKeyPair {
  /** PEM, PKCS#8. */
  privateKey: string;
  /** PEM, SubjectPublicKeyInfo. */
  publicKey: string;
  created: string;
}

const RESPONSE_SIGNING = 'response-signing';

const generateKeyPair = promisify(crypto.generateKeyPair);

/** A fresh RSA-2048 key pair, PEM (made off the event loop: it takes tens of milliseconds). */
export async function generateRsaKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  const { privateKey, publicKey } = await generateKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKey: String(privateKey), publicKey: String(publicKey) };
}

export class ServiceKeyRepository {
  private readonly db: Database<ServiceKeyPair, string>;

  constructor(root: RootDatabase) {
    this.db = root.openDB<ServiceKeyPair, string>({ name: 'service-keys' });
  }

  /** The response-signing key pair, made and stored on first use (ifNoExists: two processes agree on one). */
  async responseSigning(): Promise<ServiceKeyPair> {
    const existing = this.db.get(RESPONSE_SIGNING);
    if (existing) return existing;
    const pair: ServiceKeyPair = { ...(await generateRsaKeyPair()), created: new Date().toISOString() };
    await this.db.ifNoExists(RESPONSE_SIGNING, () => { this.db.put(RESPONSE_SIGNING, pair); });
    return this.db.get(RESPONSE_SIGNING)!;
  }
}
