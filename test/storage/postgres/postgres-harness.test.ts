// The PostgreSQL test harness (test/helpers/postgres.ts) against Debian's server: it starts a private server on
// a loopback port (as the `postgres` user when run as root), which `pg` reaches; a transaction commits what
// it inserts and a rolled-back one leaves nothing; an advisory lock held by one session is refused to a
// second (pg_try_advisory_lock false), whose blocking pg_advisory_lock waits (seen in pg_locks, not timed)
// until the first releases; LISTEN/NOTIFY delivers a payload between two sessions; stop() leaves the port
// refusing connections and the folder gone. Skips only where no server binaries are found.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { Client, Pool, type Notification } from 'pg';
import { postgresSkipReason, startPostgres } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) {
  t.plan(0, skip);
} else {
  void run();
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

async function run(): Promise<void> {
  const started = Date.now();
  const pg = await startPostgres();
  const startMs = Date.now() - started;
  t.comment(`server started in ${startMs} ms on port ${pg.port}`);
  t.teardown(() => pg.stop());

  t.match(pg.url, new RegExp(`^postgres://face_check@127\\.0\\.0\\.1:${pg.port}/face_check$`), 'loopback url');
  t.ok(fs.statSync(pg.dataDir).isDirectory(), 'data directory exists while running');
  if (process.getuid?.() === 0) {
    t.not(fs.statSync(pg.dataDir).uid, 0, 'run as root, the cluster belongs to an unprivileged user');
  }

  const pool = new Pool({ connectionString: pg.url, max: 4 });

  await t.test('version and database', async (t) => {
    const { rows } = await pool.query<{ version: string; db: string; usr: string }>(
      'SELECT version() AS version, current_database() AS db, current_user AS usr',
    );
    t.match(rows[0].version, /^PostgreSQL \d+/, rows[0].version);
    t.equal(rows[0].db, 'face_check');
    t.equal(rows[0].usr, 'face_check');
  });

  await t.test('a transaction commits; a rolled-back one leaves nothing', async (t) => {
    await pool.query('CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)');
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('INSERT INTO items (name) VALUES ($1), ($2)', ['alpha', 'beta']);
      const inside = await c.query<{ name: string }>('SELECT name FROM items ORDER BY id');
      t.same(inside.rows.map((r) => r.name), ['alpha', 'beta'], 'visible inside the transaction');
      const outside = await pool.query<{ n: string }>('SELECT count(*) AS n FROM items');
      t.equal(outside.rows[0].n, '0', 'not visible to another session before COMMIT');
      await c.query('COMMIT');

      await c.query('BEGIN');
      await c.query('INSERT INTO items (name) VALUES ($1)', ['gamma']);
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    const after = await pool.query<{ name: string }>('SELECT name FROM items ORDER BY id');
    t.same(after.rows.map((r) => r.name), ['alpha', 'beta'], 'committed rows only, read by another session');
  });

  await t.test('an advisory lock excludes a second session until released', async (t) => {
    const KEY = 4242;
    const a = await pool.connect();
    const b = await pool.connect();
    try {
      const pidB = (await b.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      await a.query('SELECT pg_advisory_lock($1)', [KEY]);
      const tryB = await b.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [KEY]);
      t.equal(tryB.rows[0].ok, false, 'pg_try_advisory_lock is refused while the first session holds it');

      let bGotIt = false;
      const blocking = b.query('SELECT pg_advisory_lock($1)', [KEY]).then(() => {
        bGotIt = true;
      });
      // The second session is queued on the lock: the server reports its request as not granted.
      for (let i = 0; ; i++) {
        const { rows } = await pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND NOT granted",
          [pidB],
        );
        if (rows[0].n === '1') break;
        if (i > 500) throw new Error('the second session never queued on the advisory lock');
        await new Promise((r) => setTimeout(r, 10));
      }
      t.equal(bGotIt, false, 'pg_advisory_lock waits while the lock is held');

      await a.query('SELECT pg_advisory_unlock($1)', [KEY]);
      await blocking;
      t.equal(bGotIt, true, 'and is granted once the first session releases');
      const tryA = await a.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [KEY]);
      t.equal(tryA.rows[0].ok, false, 'now the first session is refused');

      await b.query('SELECT pg_advisory_unlock($1)', [KEY]);
      const tryA2 = await a.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [KEY]);
      t.equal(tryA2.rows[0].ok, true, 'pg_try_advisory_lock succeeds after release');
      await a.query('SELECT pg_advisory_unlock($1)', [KEY]);
    } finally {
      a.release();
      b.release();
    }
  });

  await t.test('LISTEN/NOTIFY delivers a payload to another session', async (t) => {
    const listener = new Client({ connectionString: pg.url });
    await listener.connect();
    try {
      const received = new Promise<Notification>((resolve) => listener.once('notification', resolve));
      await listener.query('LISTEN face_check_events');
      const payload = JSON.stringify({ kind: 'person-updated', id: 'p-1', at: Date.now() });
      await pool.query('SELECT pg_notify($1, $2)', ['face_check_events', payload]);
      const n = await received;
      t.equal(n.channel, 'face_check_events');
      t.equal(n.payload, payload);
      t.not(n.processId, (await listener.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid,
        'sent by another backend');
    } finally {
      await listener.end();
    }
  });

  await pool.end();

  await t.test('stop() stops the server and removes its folder', async (t) => {
    const stopping = Date.now();
    await pg.stop();
    t.comment(`server stopped in ${Date.now() - stopping} ms`);
    t.equal(await refusesConnections(pg.port), true, 'the port refuses connections');
    t.notOk(fs.existsSync(pg.dataDir), 'data directory removed');
    t.notOk(fs.existsSync(path.dirname(pg.dataDir)), 'temp folder removed');
    await pg.stop(); // a second call (the teardown's) is harmless
  });
}
