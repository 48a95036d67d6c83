// The PostgreSQL pool fails fast and heals by itself: a refused port, a listener that never answers, a
// statement past its timeout, a backend that froze mid-query, and a server that is stopped all fail with
// DatabaseUnavailableError (503) within their timeouts instead of hanging; a terminated connection inside a
// transaction is dropped, not reused; once the server is back the same pool serves again, without a restart.
// A store cannot even open on an unreachable database (unavailable, not a hang). Each "fails fast" check has
// a generous outer bound (a hang would exceed it), not a timing target.
import net from 'node:net';
import t from 'tap';
import { DatabaseUnavailableError } from '../../../src/storage/errors';
import { PostgresPool, postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, startPostgres } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

/** Rejects with what `p` rejected with; fails the test when `p` resolves. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function run(): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());

  await t.test('a refused port: unreachable, at once', async (t) => {
    const pool = new PostgresPool(postgresSettings(`postgres://face_check@127.0.0.1:${await closedPort()}/face_check`,
      { connectTimeoutMs: 2_000 }));
    t.teardown(() => pool.close());
    const started = Date.now();
    const err = await rejection(pool.query('SELECT 1'));
    t.type(err, DatabaseUnavailableError);
    t.equal((err as DatabaseUnavailableError).reason, 'unreachable');
    t.equal((err as DatabaseUnavailableError).httpStatus, 503);
    t.ok(Date.now() - started < 2_000, 'before the connect timeout');
    t.notMatch((err as Error).message, /face_check@/, 'the message does not carry the url');
  });

  await t.test('a store cannot open on an unreachable database: unavailable, at once', async (t) => {
    const url = `postgres://face_check@127.0.0.1:${await closedPort()}/face_check`;
    const err = await rejection(openPostgresStore(postgresSettings(url), { keyFile: '/nonexistent/never-made.key' }));
    t.type(err, DatabaseUnavailableError);
  });

  await t.test('a listener that never answers: timeout after connectTimeoutMs, not a hang', async (t) => {
    const sockets = new Set<net.Socket>();
    const blackHole = net.createServer((s) => { sockets.add(s); });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    t.teardown(() => {
      for (const s of sockets) s.destroy();
      blackHole.close();
    });
    const { port } = blackHole.address() as net.AddressInfo;
    const pool = new PostgresPool(postgresSettings(`postgres://face_check@127.0.0.1:${port}/face_check`, { connectTimeoutMs: 300 }));
    t.teardown(() => pool.close());
    const started = Date.now();
    const err = await rejection(pool.transaction(async (tx) => tx.query('SELECT 1')));
    t.type(err, DatabaseUnavailableError);
    t.equal((err as DatabaseUnavailableError).reason, 'timeout');
    t.ok(Date.now() - started < 5_000, `gave up after ${Date.now() - started} ms (connect timeout 300 ms)`);
  });

  await t.test('a statement past statement_timeout: timeout; the pool still serves', async (t) => {
    const pool = new PostgresPool(postgresSettings(pg.url, { statementTimeoutMs: 300 }));
    t.teardown(() => pool.close());
    const err = await rejection(pool.query('SELECT pg_sleep(10)'));
    t.type(err, DatabaseUnavailableError);
    t.equal((err as DatabaseUnavailableError).reason, 'timeout');
    t.same((await pool.query('SELECT 41 + 1 AS n')).rows, [{ n: 42 }]);
  });

  await t.test('a frozen backend: the client-side read timeout ends the wait', async (t) => {
    const pool = new PostgresPool(postgresSettings(pg.url, { statementTimeoutMs: 300, poolSize: 1 }));
    t.teardown(() => pool.close());
    const err = await rejection(pool.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // A stopped process answers nothing, not even the server's own statement timeout.
      process.kill(rows[0].pid, 'SIGSTOP');
      try {
        return await tx.query('SELECT 1');
      } finally {
        setTimeout(() => process.kill(rows[0].pid, 'SIGCONT'), 2_000).unref();
      }
    }));
    t.type(err, DatabaseUnavailableError);
    t.equal((err as DatabaseUnavailableError).reason, 'timeout');
    // The one connection was dropped, not returned: a fresh one serves the next request.
    t.same((await pool.query('SELECT 1 AS n')).rows, [{ n: 1 }]);
  });

  await t.test('a connection terminated inside a transaction is dropped, and the next transaction works', async (t) => {
    const pool = new PostgresPool(postgresSettings(pg.url, { poolSize: 1 }));
    const admin = new PostgresPool(postgresSettings(pg.url, { poolSize: 1 }));
    t.teardown(async () => { await pool.close(); await admin.close(); });
    await pool.query('CREATE TABLE IF NOT EXISTS pool_items (n integer)');
    const err = await rejection(pool.transaction(async (tx) => {
      await tx.query('INSERT INTO pool_items VALUES (1)');
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      await tx.query('INSERT INTO pool_items VALUES (2)');
    }));
    t.type(err, DatabaseUnavailableError);
    t.same((await pool.query('SELECT count(*)::int AS n FROM pool_items')).rows, [{ n: 0 }], 'nothing of it committed');
    await pool.transaction(async (tx) => { await tx.query('INSERT INTO pool_items VALUES (3)'); });
    t.same((await pool.query('SELECT n FROM pool_items')).rows, [{ n: 3 }]);
  });

  await t.test('server stopped: every request fails fast; started again: the same pool serves', async (t) => {
    const pool = new PostgresPool(postgresSettings(pg.url, { connectTimeoutMs: 1_000, poolSize: 4 }));
    t.teardown(() => pool.close());
    // Idle connections in the pool, which the stop breaks under it.
    await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT pg_sleep(0.05)')));
    await pg.halt();
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const err = await rejection(i % 2 ? pool.query('SELECT 1') : pool.transaction((tx) => tx.query('SELECT 1')));
      t.type(err, DatabaseUnavailableError, `request ${i} while stopped`);
      t.ok(Date.now() - started < 3_000, `request ${i} answered in ${Date.now() - started} ms`);
    }
    await pg.resume();
    t.same((await pool.query('SELECT 7 AS n')).rows, [{ n: 7 }], 'served after the restart');
    t.same(await pool.transaction(async (tx) => (await tx.query('SELECT 8 AS n')).rows), [{ n: 8 }]);
  });
}
