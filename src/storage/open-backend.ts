// Opens the store the configuration names, once per process: LMDB (the folder, locked against a second
// serving process) behind the asynchronous interface, or the PostgreSQL database shared by the cloud's nodes.
import type { StorageConfig } from '../config/types';
import { lmdbAsyncStore, type LmdbAsyncStore } from './lmdb/async-store';
import { postgresSettings } from './postgres/pool';
import { openPostgresStore, type PostgresStore } from './postgres/store';
import { lockStore } from './lmdb/process-lock';
import { openStore } from './lmdb/store';

export type OpenedBackend =
  | { kind: 'lmdb'; store: LmdbAsyncStore; close(): Promise<void> }
  | { kind: 'postgres'; store: PostgresStore; close(): Promise<void> };

/** The node's PostgreSQL settings from [storage]. */
export function postgresSettingsOf(storage: StorageConfig, applicationName = 'face-check') {
  return postgresSettings(storage.postgres_url, {
    poolSize: storage.postgres_pool_size,
    statementTimeoutMs: storage.postgres_statement_timeout_ms,
    connectTimeoutMs: storage.postgres_connect_timeout_ms,
    applicationName,
  });
}

/**
 * Opens [storage]'s backend for `purpose` (the process lock's name: only LMDB needs it, PostgreSQL is made
 * for several processes). An unreachable database fails within the connect timeout (DatabaseUnavailableError).
 */
export async function openBackend(storage: StorageConfig, purpose: string): Promise<OpenedBackend> {
  if (storage.backend === 'postgres') {
    const store = await openPostgresStore(postgresSettingsOf(storage), { keyFile: storage.key_file });
    return { kind: 'postgres', store, close: () => store.close() };
  }
  const lock = lockStore(storage.path, purpose);
  try {
    const store = lmdbAsyncStore(await openStore(storage.path, { keyFile: storage.key_file }));
    return {
      kind: 'lmdb', store,
      close: async () => {
        try {
          await store.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}
