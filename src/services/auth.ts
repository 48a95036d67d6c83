// API key -> caller. Missing or unknown key: 401. Known but revoked, or its role lacks the operation's
// permission: 403. The [auth] bootstrap_key acts as a key of account "default" with role full. A licensed
// device also accepts the device keys of its licence line (src/licensing/device/device-keyring.ts), known by their
// hash from its last licence document; they act for account "default" too, so every key of a board sees the
// same persons, whether it was made on the board or on the licence line.
import crypto from 'node:crypto';
import type { ErrorCatalog } from '../errors';
import type { AsyncApiKeyRepository, AsyncKeyUsageRepository } from '../storage/interfaces';
import { hashKey } from '../storage/records';
import type { Role } from '../domain/roles';
import { roleAllows, type Permission } from './permissions';

export const DEFAULT_ACCOUNT = 'default';

export interface Principal {
  accountId: string;
  role: Role;
  keyId: string;
  /** Set when the key signs its requests (spec 5): the client's RSA public key, PEM. */
  signingPublicKey?: string;
  /** A device key of the licence line (no record in this store). */
  fromLicence?: true;
}

/** A licensed device's keys from its licence document, by the SHA-256 of the key. */
export interface LicenceKeySource {
  apiKey(keySha256: string): { keyId: string; role: Role; signingPublicKey?: string } | undefined;
}

export class Authenticator {
  private readonly bootstrapHash?: Buffer;

  constructor(
    private readonly keys: AsyncApiKeyRepository,
    private readonly errors: ErrorCatalog,
    bootstrapKey: string,
    private readonly now: () => Date = () => new Date(),
    /** Where each authenticated request is counted per key and day (the back-office's usage charts). */
    private readonly usage?: AsyncKeyUsageRepository,
    /** Device mode with a licence: the licence line's device keys. */
    private readonly licenceKeys?: LicenceKeySource,
  ) {
    if (bootstrapKey) this.bootstrapHash = Buffer.from(hashKey(bootstrapKey), 'hex');
  }

  /** The principal for `key`, or throws the 401/403 ApiError. */
  async authenticate(key: string | undefined, permission: Permission): Promise<Principal> {
    if (!key) throw this.errors.create('Unauthorized', 'no Api-Key header');
    const principal = await this.resolve(key);
    if (!principal) {
      // A licensed device says where its keys come from: an account's cloud key is the usual mistake.
      if (this.licenceKeys) {
        throw this.errors.explain('Unauthorized', 'unknown API key: this device accepts the keys made on it (face-check keys ' +
          'create) and the device keys (fcd_...) of its licence line as of its last licence check, not the account\'s cloud keys');
      }
      throw this.errors.create('Unauthorized', 'unknown API key');
    }
    if (principal === 'revoked') throw this.errors.create('Forbidden', 'revoked API key');
    if (!roleAllows(principal.role, permission)) {
      throw this.errors.create('Forbidden', `role ${principal.role} lacks ${permission}`);
    }
    // Not awaited: the answer does not wait for the write, and a failed one loses only the key's last-use time.
    if (principal.keyId !== 'bootstrap' && !principal.fromLicence) {
      this.keys.recordUse(key, this.now()).catch(() => undefined);
      this.usage?.record(principal.keyId, this.now());
    }
    return principal;
  }

  private async resolve(key: string): Promise<Principal | 'revoked' | undefined> {
    if (this.bootstrapHash) {
      const given = Buffer.from(hashKey(key), 'hex');
      if (crypto.timingSafeEqual(given, this.bootstrapHash)) {
        return { accountId: DEFAULT_ACCOUNT, role: 'full', keyId: 'bootstrap' };
      }
    }
    const fromLicence = this.licenceKeys?.apiKey(hashKey(key));
    if (fromLicence) {
      const principal: Principal = { accountId: DEFAULT_ACCOUNT, role: fromLicence.role, keyId: fromLicence.keyId, fromLicence: true };
      if (fromLicence.signingPublicKey) principal.signingPublicKey = fromLicence.signingPublicKey;
      return principal;
    }
    const record = await this.keys.lookup(key);
    if (!record) return undefined;
    if (record.revoked !== null) return 'revoked';
    const principal: Principal = { accountId: record.accountId, role: record.role, keyId: record.keyId };
    if (record.signingPublicKey) principal.signingPublicKey = record.signingPublicKey;
    return principal;
  }
}
