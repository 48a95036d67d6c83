// One schema version: the statements that bring the schema from the version before to this one.
export interface Migration {
  /** 1, 2, 3, … without gaps. */
  version: number;
  name: string;
  /** Statements run in the migration transaction (no CREATE INDEX CONCURRENTLY, no VACUUM). */
  sql: string;
}
