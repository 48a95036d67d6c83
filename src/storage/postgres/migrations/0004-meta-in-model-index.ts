// Schema 4: the model index carries each person's created and updated. A node whose change follower listens
// fills its cache of persons' meta from the table (../meter-caches.ts), so that the first identify or verify
// of a person that was in the database before the node started makes no statement either. Walking the
// index alone (an index-only scan) reads ~60 B a person, where the heap holds ~4 KB rows (schema 2 keeps the
// templates inline). The index stays one insert per create: it is rebuilt, not added beside.
import type { Migration } from './migration';

export const META_IN_MODEL_INDEX: Migration = {
  version: 4,
  name: 'persons meta in the model index',
  sql: `
DROP INDEX persons_by_model;
CREATE INDEX persons_by_model ON persons (model_id, account_id, person_id) INCLUDE (created, updated);
`,
};
