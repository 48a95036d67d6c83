// Versioned schema migrations, run by every node at start. All of them run in one transaction that first
// takes a fixed advisory lock, so nodes starting together queue on the lock and each finds the versions
// the others applied: a schema is applied once, and a half-applied schema is never visible (PostgreSQL's
// DDL is transactional). A database whose schema is newer than this program knows is refused, untouched.
import { pg } from './pg-module';
import { SchemaTooNewError, translated } from '../errors';
import { INITIAL_SCHEMA } from './migrations/0001-initial';
import { INLINE_TEMPLATES } from './migrations/0002-inline-templates';
import { ACCOUNT_NOTIFY } from './migrations/0003-account-notify';
import { META_IN_MODEL_INDEX } from './migrations/0004-meta-in-model-index';
import { ONE_ROUND_TRIP_LOCKS } from './migrations/0005-one-round-trip-locks';
import { SIGN_IN_ADDRESSES_REGISTRATION_CODES } from './migrations/0006-sign-in-addresses-registration-codes';
import { LICENCE_DEVICE_KEYS } from './migrations/0007-licence-device-keys';
import { LICENCE_USAGE_REPORTS } from './migrations/0008-licence-usage-reports';
import type { Migration } from './migrations/migration';
import { clientOptions, type PostgresSettings, type Queryable } from './pool';
import { MIGRATION_LOCK } from './lock-keys';

export type { Migration };

/** Every migration this program knows, oldest first. */
export const MIGRATIONS: readonly Migration[] = [INITIAL_SCHEMA, INLINE_TEMPLATES, ACCOUNT_NOTIFY, META_IN_MODEL_INDEX, ONE_ROUND_TRIP_LOCKS,
  SIGN_IN_ADDRESSES_REGISTRATION_CODES, LICENCE_DEVICE_KEYS, LICENCE_USAGE_REPORTS];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/**
 * A migration may rewrite large tables: it is not bound by the request statement timeout, only by this (a
 * node waiting on another's migration waits as long).
 */
const MIGRATION_TIMEOUT_MS = 30 * 60_000;

export interface MigrationOutcome {
  /** Schema version found (0: empty database). */
  from: number;
  to: number;
  /** Versions this call applied (empty when another node had applied them, or none were due). */
  applied: number[];
}

function checkedList(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration list: entry ${i} is version ${m.version}, expected ${i + 1}`);
  });
}

/** Brings the database at settings.url to the newest schema of `migrations` (default: this program's). */
export async function migrate(settings: PostgresSettings, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationOutcome> {
  checkedList(migrations);
  const latest = migrations.length ? migrations[migrations.length - 1].version : 0;
  // A connection of its own, without the pool's read timeout: a migration may take long.
  const client = new (pg().Client)({ ...clientOptions(settings, `${settings.applicationName} migrations`), query_timeout: undefined,
    statement_timeout: MIGRATION_TIMEOUT_MS });
  client.on('error', () => undefined);  // surfaces on the next query
  try {
    await client.connect();
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      const present = new Set(rows.map((r) => r.version));
      const from = rows.length ? rows[rows.length - 1].version : 0;
      if (from > latest) throw new SchemaTooNewError(from, latest);
      const applied: number[] = [];
      for (const m of migrations) {
        if (present.has(m.version)) continue;
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        applied.push(m.version);
      }
      await client.query('COMMIT');
      return { from, to: latest, applied };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } catch (err) {
    throw translated(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The schema version of the database (0 when it has none), without changing anything. */
export async function schemaVersion(db: Queryable): Promise<number> {
  const exists = await db.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (!exists.rows[0].present) return 0;
  const { rows } = await db.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return Number(rows[0].v ?? 0);
}
