// The LMDB environment: the service's source of truth. One environment holds every named database, so a
// person's metadata, template and reference image are written in one transaction.
import fs from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { PersonRepository } from './persons';
import { ApiKeyRepository } from './api-keys';
import { QuotaRepository } from './quota';
import { ServiceKeyRepository } from './service-key';
import { AccountLocks } from './account-lock';

// 2: templates in segments of 32 (src/storage/template-segment.ts); 1 kept them in the person records.
const SCHEMA_VERSION = 2;

export interface Store {
  readonly path: string;
  readonly persons: PersonRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly quota: QuotaRepository;
  readonly serviceKeys: ServiceKeyRepository;
  /**
   * Runs `fn` exclusively for the account: check-then-write rules (a free person_id, a face not enrolled
   * yet) hold under concurrent requests.
   */
  exclusive<T>(accountId: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openStore(dir: string): Promise<Store> {
  fs.mkdirSync(dir, { recursive: true });
  const root: RootDatabase = open({ path: dir, compression: false });
  const meta = root.openDB<unknown, string>({ name: 'meta' });
  const persons = new PersonRepository(root);
  const version = meta.get('schema');
  if (version === undefined) await meta.put('schema', SCHEMA_VERSION);
  else if (version === 1) {
    await persons.moveInlineTemplates();
    await meta.put('schema', SCHEMA_VERSION);
  } else if (version !== SCHEMA_VERSION) {
    await root.close();
    throw new Error(`storage ${dir}: schema version ${String(version)}, this program reads ${SCHEMA_VERSION}`);
  }
  const locks = new AccountLocks();
  return {
    path: dir,
    persons,
    apiKeys: new ApiKeyRepository(root),
    quota: new QuotaRepository(root),
    serviceKeys: new ServiceKeyRepository(root),
    exclusive: (accountId, fn) => locks.run(accountId, fn),
    close: () => root.close(),
  };
}
