// The LMDB environment: the service's source of truth. One environment holds every named database, so a
// person's metadata, template and reference image are written in one transaction.
import fs from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { PersonRepository } from './persons';
import { ApiKeyRepository } from './api-keys';
import { QuotaRepository } from './quota';

const SCHEMA_VERSION = 1;

export interface Store {
  readonly path: string;
  readonly persons: PersonRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly quota: QuotaRepository;
  close(): Promise<void>;
}

export function openStore(dir: string): Store {
  fs.mkdirSync(dir, { recursive: true });
  const root: RootDatabase = open({ path: dir, compression: false });
  const meta = root.openDB<unknown, string>({ name: 'meta' });
  const version = meta.get('schema');
  if (version === undefined) meta.putSync('schema', SCHEMA_VERSION);
  else if (version !== SCHEMA_VERSION) {
    void root.close();
    throw new Error(`storage ${dir}: schema version ${String(version)}, this program reads ${SCHEMA_VERSION}`);
  }
  return {
    path: dir,
    persons: new PersonRepository(root),
    apiKeys: new ApiKeyRepository(root),
    quota: new QuotaRepository(root),
    close: () => root.close(),
  };
}
