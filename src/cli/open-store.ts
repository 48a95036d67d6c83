// The store a command works on, by [storage] backend: the LMDB folder (readable beside a running service:
// lmdb-js serialises writers between processes) or the cluster's PostgreSQL database.
import type { Config } from '../config/types';
import { lmdbAsyncStore } from '../storage/lmdb/async-store';
import { postgresSettingsOf } from '../storage/open-backend';
import type { AsyncStore } from '../storage/interfaces';
import { openPostgresStore } from '../storage/postgres/store';
import { openStore } from '../storage/lmdb/store';

/** `bulkReads`: the command reads the whole store (StoreOptions.bulkReads). */
export async function openCommandStore(config: Config, options: { bulkReads?: boolean } = {}): Promise<AsyncStore> {
  if (config.storage.backend === 'postgres') {
    return openPostgresStore(postgresSettingsOf(config.storage, 'face-check-cli'), { keyFile: config.storage.key_file });
  }
  return lmdbAsyncStore(await openStore(config.storage.path, { keyFile: config.storage.key_file, bulkReads: options.bulkReads }));
}
