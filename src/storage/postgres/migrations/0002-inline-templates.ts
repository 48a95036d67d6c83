// Schema 2: persons' sealed templates stored in the table's own rows instead of TOASTed. A node's start
// reads every template once (the gallery build's COPY); out of line, each template cost the server an index
// lookup and two chunk reads in the TOAST table, so a start's read of every template is faster inline
// (docs/postgres.md, docs/benchmarks.md). STORAGE MAIN keeps the ~2.9 KB value inline as long as the row fits a page, and a
// toast_tuple_target of 4080 stops the toaster from trying to compress it first (sealed bytes never
// compress); the reference image stays out of line. The heap grows from ~0.2 to ~4 KB a person (two rows
// per 8 KB page). Existing rows are rewritten here, so every template is inline after the upgrade.
import type { Migration } from './migration';

export const INLINE_TEMPLATES: Migration = {
  version: 2,
  name: 'sealed templates inline',
  sql: `
ALTER TABLE persons ALTER COLUMN sealed_template SET STORAGE MAIN;
ALTER TABLE persons SET (toast_tuple_target = 4080);
-- A new value (not the stored TOAST pointer) is written, so each row takes the new storage.
UPDATE persons SET sealed_template = sealed_template || ''::bytea;
`,
};
