// Schema 8: the last numbered usage report added per licence (the device that sent it, its store's report
// series and the number), so a report a device sends again after a lost answer is acknowledged without
// being added twice (../licence-usage.ts). A licence without a row has had no numbered report.
import type { Migration } from './migration';

export const LICENCE_USAGE_REPORTS: Migration = {
  version: 8,
  name: 'licence usage reports',
  sql: `
CREATE TABLE licence_usage_reports (
  licence_id text PRIMARY KEY,
  fingerprint text NOT NULL,
  series text NOT NULL,
  number bigint NOT NULL CHECK (number > 0),
  added_at timestamptz NOT NULL
);
`,
};
