// API key -> caller. Missing or unknown key: 401. Known but revoked, or its role lacks the operation's
// permission: 403. The [auth] bootstrap_key acts as a key of account "default" with role full.
import crypto from 'node:crypto';
import type { ErrorCatalog } from '../errors';
import type { AsyncApiKeyRepository, AsyncKeyUsageRepository } from '../storage/postgres/interfaces';
import { hashKey } from '../storage/api-keys';
import type { Role } from '../domain/roles';
import { roleAllows, type Permission } from './permissions';

export const DEFAULT_ACCOUNT = 'default';

export interface Principal {
  accountId: string;
  role: Role;
  keyId: string;
  /** Set when the key signs its requests (spec 5): the client's RSA public key, PEM. */
  signingPublicKey?: string;
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
  ) {
    if (bootstrapKey) this.bootstrapHash = Buffer.from(hashKey(bootstrapKey), 'hex');
  }

  /** The principal for `key`, or throws the 401/403 ApiError. */
  async authenticate(key: string | undefined, permission: Permission): Promise<Principal> {
    if (!key) throw this.errors.create('Unauthorized', 'no Api-Key header');
    const principal = await this.resolve(key);
    if (!principal) throw this.errors.create('Unauthorized', 'unknown API key');
    if (principal === 'revoked') throw this.errors.create('Forbidden', 'revoked API key');
    if (!roleAllows(principal.role, permission)) {
      throw this.errors.create('Forbidden', `role ${principal.role} lacks ${permission}`);
    }
    // Not awaited: the answer does not wait for the write, and a failed one loses only the key's last-use time.
    if (principal.keyId !== 'bootstrap') {
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
    const record = await this.keys.lookup(key);
    if (!record) return undefined;
    if (record.revoked !== null) return 'revoked';
    const principal: Principal = { accountId: record.accountId, role: record.role, keyId: record.keyId };
    if (record.signingPublicKey) principal.signingPublicKey = record.signingPublicKey;
    return principal;
  }
}
