// The LMDB environment: the service's source of truth. One environment holds every named database, so a
// person's metadata, template and reference image are written in one transaction. Templates, reference
// images and the service's private key are sealed under the store's data key (./crypto/), which the key file
// unwraps; the folder is 0700 and its files 0600.
import type { AsyncStore, LocalStore } from '../interfaces';
import path from 'node:path';
import type { RootDatabase, RootDatabaseOptionsWithPath } from 'lmdb';
import { lmdb } from './load';
import { PersonRepository } from './persons';
import { ApiKeyRepository } from './api-keys';
import { AccountRepository } from './accounts';
import { RequestSignatureRepository } from './request-signatures';
import { SessionRepository } from './sessions';
import { ActivationCodeRepository } from './activation-codes';
import { LicenceRepository } from './licences';
import { LicenceUsageRepository } from './licence-usage';
import { DeviceUsageRepository } from './device-usage';
import { KnownAddressRepository } from './known-addresses';
import { lmdbKeyUsage } from './key-usage';
import type { WriteBehindKeyUsage } from '../key-usage-counter';
import { QuotaRepository } from './quota';
import { ServiceKeyRepository } from './service-key';
import { AccountLocks } from './account-lock';
import { COMPACT_PENDING, dataKeyUses, rotateKeyFile, storedDataKeyWrap, unlockDataKey } from '../crypto/data-key';
import { DEFAULT_KEY_FILE } from '../crypto/key-file';
import { DataKeySealer, plainValues } from '../crypto/sealer';
import { privateFiles, privateFolder } from './file-modes';
import { replaceWithCompactCopy, soleUser } from './compact';
import { endSealing, sealPlainStore } from './seal-migration';
import { endTemplateRows, writeTemplateRows } from './template-rows-migration';
import type { ChangeLog } from './change-log';
import { lmdbDataFile, MapAdvice } from './map-advice';

// 4: a sealed template row per person, template counts per account and the change log (./template-rows.ts,
// ./segment-store.ts, ./change-log.ts); 3: templates,
// images and private keys sealed; 2: templates in segments of 32 (./template-segment.ts); 1 kept them in the
// person records.
export const SCHEMA_VERSION = 4;

export { DEFAULT_KEY_FILE } from '../crypto/key-file';

export interface StoreOptions {
  /** The key-encryption key's file; default `<dir>/face-check.key`, made (0600) when a new store opens. */
  keyFile?: string;
  /**
   * The caller reads the whole store (face-check migrate): the map keeps the kernel's default read-ahead
   * instead of random advice (./map-advice.ts).
   */
  bulkReads?: boolean;
}

/**
 * The store itself (what only LMDB has: synchronous reads, the snapshots' keys, the storage migrations); the
 * services see it through ./async-store.ts. rotateKey leaves the old wrap in a freed page until the next open
 * with no other reader compacts the store: close and reopen (the rotate-key command does).
 */
export interface Store extends LocalStore, Pick<AsyncStore, 'rotateKey' | 'deriveKey'> {
  /** The key file that opened the store. */
  readonly keyFile: string;
  readonly persons: PersonRepository;
  /** Who changed, in commit order (the same log as persons.changes). */
  readonly changes: ChangeLog;
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
  /** The client addresses each account signed in from (the sign-in throttle spares them). */
  readonly knownAddresses: KnownAddressRepository;
  readonly licenceUsage: LicenceUsageRepository;
  /** A licensed device's answered requests until the cloud acknowledged them (device mode). */
  readonly deviceUsage: DeviceUsageRepository;
  /** Requests per API key and UTC day (statistics, written every few seconds: ./key-usage.ts). */
  readonly keyUsage: WriteBehindKeyUsage;
  /** Signed requests accepted within the timestamp window (a replay is refused, also after a restart). */
  readonly requestSignatures: RequestSignatureRepository;
  /**
   * Runs `fn` exclusively for the account: check-then-write rules (a free person_id, a face not enrolled
   * yet) hold under concurrent requests.
   */
  exclusive<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Opens (creating if missing) the store at `dir`. Stores of schema 1 to 3 are migrated (schema 2's plain
 * values sealed, schema 3's template rows written); a sealed store whose key file is missing, unreadable or wrong is refused (StoreKeyError).
 */
export async function openStore(dir: string, options: StoreOptions = {}): Promise<Store> {
  const keyFile = path.resolve(options.keyFile || path.join(dir, DEFAULT_KEY_FILE));
  privateFolder(dir);
  // lmdb-js opens at most 12 named databases by default; persons, keys, accounts, sessions and licences
  // need more. The bound is per open, not stored: raising it later needs no migration. noReadAhead: the
  // map is advised random, scans excepted (./map-advice.ts).
  const root: RootDatabase = lmdb.open({ path: dir, compression: false, maxDbs: 64, noReadAhead: !options.bulkReads } as RootDatabaseOptionsWithPath);
  const mapAdvice = new MapAdvice(lmdbDataFile(dir), !options.bulkReads);
  let closed = false;
  try {
    privateFiles(dir);
    const meta = root.openDB<unknown, string>({ name: 'meta' });
    let version = meta.get('schema');
    if (version !== undefined && version !== 1 && version !== 2 && version !== 3 && version !== SCHEMA_VERSION) {
      throw new Error(`storage ${dir}: schema version ${String(version)}, this program reads ${SCHEMA_VERSION}`);
    }
    if (version === 1) {
      await mapAdvice.during(() => new PersonRepository(root, plainValues).moveInlineTemplates());
      await meta.put('schema', (version = 2));
    }
    const dataKey = await unlockDataKey(meta, keyFile, dir, version === 3 || version === SCHEMA_VERSION);
    privateFiles(dir);  // a key file just made in the folder
    const sealer = new DataKeySealer(dataKey);
    const persons = new PersonRepository(root, sealer, mapAdvice);
    const serviceKeys = new ServiceKeyRepository(root, sealer);
    // The migrations read every record: under the kernel's usual read-ahead.
    if (version === 2) await mapAdvice.during(() => sealPlainStore(root, meta, sealer, serviceKeys));
    if (version === 2 || version === 3) await mapAdvice.during(() => writeTemplateRows(root, meta, persons));
    if (version !== SCHEMA_VERSION) {
      // A store sealed by this migration has its plain values left in freed pages (./compact.ts); a new
      // store has none, and schema 3 was sealed already.
      const sealedNow = version === 2;
      const counts = version === undefined ? undefined : persons.segments.countFromKeys();
      await meta.transaction(() => {
        endSealing(meta);
        endTemplateRows(meta, persons, counts);
        if (sealedNow) meta.put(COMPACT_PENDING, true);
        meta.put('schema', SCHEMA_VERSION);
      });
    }
    if (meta.get(COMPACT_PENDING) === true && soleUser(root)) {
      closed = true;
      await mapAdvice.during(() => replaceWithCompactCopy(root, dir));
      return await openStore(dir, options);
    }
    const locks = new AccountLocks();
    const activationCodes = new ActivationCodeRepository(root);
    const licenceUsage = new LicenceUsageRepository(root);
    const keyUsage = lmdbKeyUsage(root);
    return {
      path: dir,
      keyFile,
      persons,
      changes: persons.changes,
      apiKeys: new ApiKeyRepository(root),
      quota: new QuotaRepository(root),
      serviceKeys,
      accounts: new AccountRepository(root),
      sessions: new SessionRepository(root),
      licences: new LicenceRepository(root, sealer, activationCodes, licenceUsage),
      activationCodes,
      knownAddresses: new KnownAddressRepository(root),
      licenceUsage,
      deviceUsage: new DeviceUsageRepository(root),
      keyUsage,
      requestSignatures: new RequestSignatureRepository(root),
      exclusive: (accountId, fn) => locks.run(accountId, fn),
      ...dataKeyUses(dataKey, keyFile, (target) => rotateKeyFile(meta, dataKey, target)),
      dataKeyWrap: () => storedDataKeyWrap(meta),
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
