// The LMDB environment: the service's source of truth. One environment holds every named database, so a
// person's metadata, template and reference image are written in one transaction. Templates, reference
// images and the service's private key are sealed under the store's data key (./crypto/), which the key file
// unwraps; the folder is 0700 and its files 0600.
import path from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { PersonRepository } from './persons';
import { ApiKeyRepository } from './api-keys';
import { AccountRepository } from './accounts';
import { SessionRepository } from './sessions';
import { ActivationCodeRepository } from './activation-codes';
import { LicenceRepository } from './licences';
import { LicenceUsageRepository } from './licence-usage';
import { KeyUsageRepository } from './key-usage';
import { QuotaRepository } from './quota';
import { ServiceKeyRepository } from './service-key';
import { AccountLocks } from './account-lock';
import { rotateKeyFile, unlockDataKey } from './crypto/data-key';
import { DataKeySealer, plainValues } from './crypto/sealer';
import { privateFiles, privateFolder } from './file-modes';
import { COMPACT_PENDING, replaceWithCompactCopy, soleUser } from './compact';
import { endSealing, sealPlainStore } from './seal-migration';

// 3: templates, images and private keys sealed; 2: templates in segments of 32 (src/storage/template-segment.ts);
// 1 kept them in the person records.
const SCHEMA_VERSION = 3;

/** The key file when [storage] key_file is empty: inside the store folder, so 0700 covers it too. */
export const DEFAULT_KEY_FILE = 'face-check.key';

export interface StoreOptions {
  /** The key-encryption key's file; default `<dir>/face-check.key`, made (0600) when a new store opens. */
  keyFile?: string;
}

export interface Store {
  readonly path: string;
  /** The key file that opened the store. */
  readonly keyFile: string;
  readonly persons: PersonRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly quota: QuotaRepository;
  readonly serviceKeys: ServiceKeyRepository;
  /** Operators' accounts (cloud mode). */
  readonly accounts: AccountRepository;
  /** Operators' sign-in sessions (cloud mode), by the SHA-256 of the token. */
  readonly sessions: SessionRepository;
  /** Device licences, the activation codes that admit them and the usage devices report (cloud mode). */
  readonly licences: LicenceRepository;
  readonly activationCodes: ActivationCodeRepository;
  readonly licenceUsage: LicenceUsageRepository;
  /** Requests per API key and UTC day (statistics, written every few seconds: ./key-usage.ts). */
  readonly keyUsage: KeyUsageRepository;
  /**
   * Runs `fn` exclusively for the account: check-then-write rules (a free person_id, a face not enrolled
   * yet) hold under concurrent requests.
   */
  exclusive<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Wraps the data key under a fresh key-encryption key written to `newKeyFile` (default: the current key
   * file, replaced atomically); afterwards the old key no longer opens the store. No record is rewritten.
   * The old wrap lingers in a freed page until the next open with no other reader compacts the store: close
   * and reopen (the rotate-key command does). Returns the new key file's path.
   */
  rotateKey(newKeyFile?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Opens (creating if missing) the store at `dir`. Stores of schema 1 and 2 are migrated (schema 2's plain
 * values sealed); a sealed store whose key file is missing, unreadable or wrong is refused (StoreKeyError).
 */
export async function openStore(dir: string, options: StoreOptions = {}): Promise<Store> {
  const keyFile = path.resolve(options.keyFile || path.join(dir, DEFAULT_KEY_FILE));
  privateFolder(dir);
  // lmdb-js opens at most 12 named databases by default; persons, keys, accounts, sessions and licences
  // need more. The bound is per open, not stored: raising it later needs no migration.
  const root: RootDatabase = open({ path: dir, compression: false, maxDbs: 32 });
  let closed = false;
  try {
    privateFiles(dir);
    const meta = root.openDB<unknown, string>({ name: 'meta' });
    let version = meta.get('schema');
    if (version !== undefined && version !== 1 && version !== 2 && version !== SCHEMA_VERSION) {
      throw new Error(`storage ${dir}: schema version ${String(version)}, this program reads ${SCHEMA_VERSION}`);
    }
    if (version === 1) {
      await new PersonRepository(root, plainValues).moveInlineTemplates();
      await meta.put('schema', (version = 2));
    }
    const dataKey = await unlockDataKey(meta, keyFile, dir, version === SCHEMA_VERSION);
    privateFiles(dir);  // a key file just made in the folder
    const sealer = new DataKeySealer(dataKey);
    const persons = new PersonRepository(root, sealer);
    const serviceKeys = new ServiceKeyRepository(root, sealer);
    if (version === 2) await sealPlainStore(root, meta, sealer, serviceKeys);
    if (version !== SCHEMA_VERSION) {
      // A migrated store's plain values are left in freed pages (./compact.ts); a new one has none.
      const migrated = version !== undefined;
      await meta.transaction(() => { endSealing(meta); if (migrated) meta.put(COMPACT_PENDING, true); meta.put('schema', SCHEMA_VERSION); });
    }
    if (meta.get(COMPACT_PENDING) === true && soleUser(root)) {
      closed = true;
      await replaceWithCompactCopy(root, dir);
      return await openStore(dir, options);
    }
    const locks = new AccountLocks();
    const activationCodes = new ActivationCodeRepository(root);
    const licenceUsage = new LicenceUsageRepository(root);
    const keyUsage = new KeyUsageRepository(root);
    return {
      path: dir,
      keyFile,
      persons,
      apiKeys: new ApiKeyRepository(root),
      quota: new QuotaRepository(root),
      serviceKeys,
      accounts: new AccountRepository(root),
      sessions: new SessionRepository(root),
      licences: new LicenceRepository(root, sealer, activationCodes, licenceUsage),
      activationCodes,
      licenceUsage,
      keyUsage,
      exclusive: (accountId, fn) => locks.run(accountId, fn),
      rotateKey: async (newKeyFile) => {
        const target = path.resolve(newKeyFile || keyFile);
        await rotateKeyFile(meta, dataKey, target);
        return target;
      },
      close: async () => {
        await keyUsage.close();
        await root.close();
      },
    };
  } catch (err) {
    if (!closed) await root.close();
    throw err;
  }
}
