// Schema migrations under the advisory lock: runners started together on an empty database all succeed and
// the schema is applied once (the initial schema creates its tables without IF NOT EXISTS, so a second
// application would fail; a test migration counts its own runs); a later start applies only what is new; a
// failing migration leaves nothing behind; a database of a newer schema is refused and left untouched.
// Schema 2 moves the persons' sealed templates written under schema 1 (TOASTed) into the table's rows.
import t from 'tap';
import { Client } from 'pg';
import { SchemaTooNewError } from '../../../src/storage/errors';
import { migrate, MIGRATIONS, SCHEMA_VERSION, schemaVersion } from '../../../src/storage/postgres/schema-upgrade';
import type { Migration } from '../../../src/storage/postgres/migrations/migration';
import { PostgresPool, postgresSettings } from '../../../src/storage/postgres/pool';
import { postgresSkipReason, startPostgres } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

/** A second migration whose every application leaves one more row. */
const COUNTED: Migration = {
  version: SCHEMA_VERSION + 1,
  name: 'counted test migration',
  sql: `CREATE TABLE IF NOT EXISTS migration_runs (n serial PRIMARY KEY); INSERT INTO migration_runs DEFAULT VALUES;`,
};

async function run(): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());

  await t.test('four runners at once on an empty database: all succeed, the schema is applied once', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('together'));
    const outcomes = await Promise.all([1, 2, 3, 4].map(() => migrate(settings)));
    t.same(outcomes.map((o) => o.to), [1, 1, 1, 1].map(() => SCHEMA_VERSION));
    t.same(outcomes.filter((o) => o.applied.length > 0).map((o) => o.applied), [MIGRATIONS.map((m) => m.version)],
      'exactly one runner applied the migrations');
    t.same(outcomes.filter((o) => o.applied.length === 0).map((o) => o.from), [1, 1, 1].map(() => SCHEMA_VERSION),
      'the others found them applied');
    const pool = new PostgresPool(settings);
    t.teardown(() => pool.close());
    const { rows } = await pool.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    t.same(rows.map((r) => r.version), MIGRATIONS.map((m) => m.version));
    t.equal(await schemaVersion(pool), SCHEMA_VERSION);
  });

  await t.test('a new version applied once by eight runners at once; a later start applies nothing', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('upgrade'));
    await migrate(settings);
    const list = [...MIGRATIONS, COUNTED];
    const outcomes = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(() => migrate(settings, list)));
    t.equal(outcomes.filter((o) => o.applied.length).length, 1, 'one runner applied it');
    t.same(outcomes.find((o) => o.applied.length)?.applied, [COUNTED.version]);
    const pool = new PostgresPool(settings);
    t.teardown(() => pool.close());
    t.same((await pool.query('SELECT count(*)::int AS n FROM migration_runs')).rows, [{ n: 1 }], 'its statements ran once');
    t.same((await migrate(settings, list)).applied, [], 'nothing left to apply');
    t.same((await pool.query('SELECT count(*)::int AS n FROM migration_runs')).rows, [{ n: 1 }]);
  });

  await t.test('a failing migration leaves nothing of itself or of those before it in the same run', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('failing'));
    const broken: Migration = { version: SCHEMA_VERSION + 1, name: 'broken', sql: 'CREATE TABLE half_done (n int); SELECT 1/0;' };
    await t.rejects(migrate(settings, [...MIGRATIONS, broken]), /division by zero/);
    const pool = new PostgresPool(settings);
    t.teardown(() => pool.close());
    t.equal(await schemaVersion(pool), 0, 'not even the initial schema stayed');
    t.same((await pool.query("SELECT to_regclass('half_done') IS NULL AS gone")).rows, [{ gone: true }]);
    t.same((await migrate(settings)).applied, MIGRATIONS.map((m) => m.version), 'the program\'s own list still applies');
  });

  await t.test('a database of a newer schema is refused and left as it is', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('newer'));
    await migrate(settings, [...MIGRATIONS, COUNTED]);
    const err = await migrate(settings).then(() => undefined, (e: unknown) => e);
    t.type(err, SchemaTooNewError);
    t.equal((err as SchemaTooNewError).databaseVersion, COUNTED.version);
    t.equal((err as SchemaTooNewError).programVersion, SCHEMA_VERSION);
    t.match((err as Error).message, /newer than this program/);
    const c = new Client({ connectionString: settings.url });
    await c.connect();
    t.teardown(() => c.end());
    t.same((await c.query('SELECT max(version) AS v FROM schema_migrations')).rows, [{ v: COUNTED.version }]);
  });

  await t.test('a migration list with a gap is refused before touching the database', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('gap'));
    await t.rejects(migrate(settings, [...MIGRATIONS, { ...COUNTED, version: SCHEMA_VERSION + 2 }]), /expected/);
    const pool = new PostgresPool(settings);
    t.teardown(() => pool.close());
    t.equal(await schemaVersion(pool), 0);
  });

  await t.test('schema 2: templates TOASTed under schema 1 are inline afterwards, the values unchanged', async (t) => {
    const settings = postgresSettings(await pg.createDatabase('inline'));
    await migrate(settings, MIGRATIONS.slice(0, 1));
    const pool = new PostgresPool(settings);
    t.teardown(() => pool.close());
    const toastRows = async () => {
      const { rows: [{ toast }] } = await pool.query<{ toast: string }>("SELECT reltoastrelid::regclass::text AS toast FROM pg_class WHERE relname = 'persons'");
      return Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${toast}`)).rows[0].n);
    };
    // Random bytes the size of a sealed 704-value template (incompressible, as sealed values are).
    await pool.query(`INSERT INTO persons SELECT 'acc', 'p' || g, now(), now(), 'model',
      decode((SELECT string_agg(md5(g::text || '/' || s), '') FROM generate_series(1, 178) s), 'hex'), '\\x00'::bytea
      FROM generate_series(1, 20) g`);
    const before = (await pool.query<{ person_id: string; t: string }>("SELECT person_id, encode(sealed_template, 'base64') AS t FROM persons ORDER BY person_id")).rows;
    t.ok(await toastRows() >= 20, 'under schema 1 each template is out of line');
    t.same((await migrate(settings)).applied, MIGRATIONS.slice(1).map((m) => m.version));
    t.equal(await toastRows(), 0, 'under schema 2 none is');
    const after = (await pool.query<{ person_id: string; t: string }>("SELECT person_id, encode(sealed_template, 'base64') AS t FROM persons ORDER BY person_id")).rows;
    t.same(after, before, 'every value unchanged');
    await pool.query(`INSERT INTO persons SELECT 'acc', 'new', now(), now(), 'model', sealed_template, sealed_image FROM persons WHERE person_id = 'p1'`);
    t.equal(await toastRows(), 0, 'a template written afterwards is inline too');
  });
}
