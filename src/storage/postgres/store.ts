// Opens the PostgreSQL store of one node: the pool, the schema brought up to date (./migrations.ts), the
// data key unwrapped with the node's key file (every node needs the same file), and the repositories over
// them. What it returns implements the asynchronous storage interface (../interfaces.ts) and adds what only a
// shared database has: the change log's position and followers, pruning.
import path from 'node:path';
import { dataKeyUses } from '../crypto/data-key';
import { DataKeySealer } from '../crypto/sealer';
import { exclusiveForAccount } from './account-lock';
import { PgAccountRepository } from './accounts';
import { PgActivationCodeRepository } from './activation-codes';
import { PgApiKeyRepository } from './api-keys';
import { ChangeFollower, type ChangeFollowerOptions } from './change-follower';
import type { PgChangeLog } from './change-log';
import { rotateDataKeyWrap, unlockPostgresDataKey } from './data-key';
import type { AsyncStore } from '../interfaces';
import { WriteBehindKeyUsage } from '../key-usage-counter';
import { PgKeyUsageRows } from './key-usage';
import { PgLicenceUsageRepository } from './licence-usage';
import { PgLicenceRepository } from './licences';
import { MeterCaches } from './meter-caches';
import { migrate, type MigrationOutcome } from './schema-upgrade';
import { PgPersonRepository } from './persons';
import { describeUrl, PostgresPool, type PostgresSettings } from './pool';
import { PgQuotaRepository } from './quota';
import { PgReplayCache } from './replay-cache';
import { PgServiceKeyRepository } from './service-keys';
import { PgSessionRepository } from './sessions';
import { PgSharedSettings } from './shared-settings';
import { PgThrottleEvents } from './sign-in-throttle';
import { SignInThrottle } from '../sign-in-throttle';
import { PgKnownAddressRepository } from './known-addresses';

export interface PostgresStoreOptions {
  /** The key-encryption key's file; the same 32 bytes on every node. Made (0600) for a new database when absent. */
  keyFile: string;
  /** Key-usage statistics are written this often (default 5 s). */
  keyUsageFlushMs?: number;
}

export interface PostgresStore extends AsyncStore {
  readonly pool: PostgresPool;
  readonly keyFile: string;
  /** What the start-up migration found and did. */
  readonly migration: MigrationOutcome;
  /** The log, with its time-based prune (pruneBefore) for a cluster's followers. */
  readonly changes: PgChangeLog;
  /** What a following node meters unlimited requests from (its fills' stats; `filled()` for tests and benchmarks). */
  readonly meterCaches: MeterCaches;
  /** A follower of the change log on its own connection (not started): read changes.lastChange() before building a gallery, follow from it. */
  followChanges(options: Omit<ChangeFollowerOptions, 'settings'>): ChangeFollower;
}

export async function openPostgresStore(settings: PostgresSettings, options: PostgresStoreOptions): Promise<PostgresStore> {
  const keyFile = path.resolve(options.keyFile);
  const migration = await migrate(settings);
  const pool = new PostgresPool(settings);
  try {
    const dataKey = await unlockPostgresDataKey(pool, keyFile, describeUrl(settings.url));
    const sealer = new DataKeySealer(dataKey);
    const keyUsage = new WriteBehindKeyUsage(new PgKeyUsageRows(pool), options.keyUsageFlushMs);
    const persons = new PgPersonRepository(pool, sealer, dataKey);
    // Filled and trusted only while a follower of this store listens (followChanges, started by a node).
    const meterCaches = new MeterCaches({ source: persons });
    return {
      pool,
      keyFile,
      migration,
      persons,
      changes: persons.changes,
      meterCaches,
      apiKeys: new PgApiKeyRepository(pool),
      quota: new PgQuotaRepository(pool, meterCaches),
      serviceKeys: new PgServiceKeyRepository(pool, sealer),
      accounts: new PgAccountRepository(pool, meterCaches),
      sessions: new PgSessionRepository(pool),
      licences: new PgLicenceRepository(pool, sealer),
      activationCodes: new PgActivationCodeRepository(pool),
      licenceUsage: new PgLicenceUsageRepository(pool),
      keyUsage,
      replayCache: new PgReplayCache(pool),
      settings: new PgSharedSettings(pool, sealer),
      knownAddresses: new PgKnownAddressRepository(pool),
      signInThrottle: (o) => new SignInThrottle(new PgThrottleEvents(pool, { now: o.now, retentionMs: o.retentionMs ?? o.windowMs }), o),
      exclusive: (accountId, fn) => exclusiveForAccount(pool, sealer, accountId, fn),
      ...dataKeyUses(dataKey, keyFile, (target) => rotateDataKeyWrap(pool, dataKey, target)),
      followChanges: (o) => new ChangeFollower({ ...o, settings, observer: meterCaches }),
      close: async () => {
        try {
          await keyUsage.close();
        } finally {
          await pool.close();
        }
      },
    };
  } catch (err) {
    await pool.close();
    throw err;
  }
}
