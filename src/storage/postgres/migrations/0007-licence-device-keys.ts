// Schema 7: the device API keys of each licence line (../../device-keys.ts), kept in the licence's row so a
// key is created, revoked and sent to the device with the licence it belongs to, under the row's lock. Each
// key is held as its SHA-256, never the key. Existing licences have none.
import type { Migration } from './migration';

export const LICENCE_DEVICE_KEYS: Migration = {
  version: 7,
  name: 'device API keys of a licence',
  sql: `
ALTER TABLE licences ADD COLUMN device_keys jsonb NOT NULL DEFAULT '[]'::jsonb;
`,
};
