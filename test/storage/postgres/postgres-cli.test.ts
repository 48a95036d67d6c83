// The commands that work on the store, on a PostgreSQL node's ini: keys are made in the shared
// database (another store on it sees them), licences are listed from it, rotate-key re-wraps the database's
// data key (the new file opens it, the old one no longer does), migrate refuses one database as source and
// target, and an unreachable database exits 69.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { main } from '../../../src/cli/main';
import { StoreKeyError } from '../../../src/storage/crypto/key-file';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

async function run(): Promise<void> {
  const { pg, dir, keyFile } = await postgresCluster(t);
  const url = await pg.createDatabase('cli');
  const ini = (database: string, key = keyFile) => {
    const file = path.join(dir, 'node.ini');
    fs.writeFileSync(file, ['[server]', 'mode = cloud', '[storage]', 'path = ./local', 'backend = postgres',
      `postgres_url = ${database}`, `key_file = ${key}`, 'postgres_connect_timeout_ms = 500'].join('\n'));
    return file;
  };

  await t.test('keys are made in the shared database, licences listed from it', async (t) => {
    const made = capture();
    t.equal(await main(['keys', 'create', '--account', 'acme', '--role', 'match', '--config', ini(url)], made.io), 0, made.err.join('\n'));
    const keyId = /created key (\S+)/.exec(made.out.join('\n'))?.[1];
    t.ok(keyId, 'a key was made');
    const listed = capture();
    t.equal(await main(['keys', 'list', '--config', ini(url)], listed.io), 0);
    t.match(listed.out.join('\n'), new RegExp(`${keyId}\\tacme\\tmatch`));
    const store = await openPostgresStore(postgresSettings(url), { keyFile });
    t.teardown(() => store.close());
    t.equal((await store.apiKeys.list()).find((k) => k.keyId === keyId)?.accountId, 'acme', 'another node sees the key');
    const licences = capture();
    t.equal(await main(['licence', 'list', '--config', ini(url)], licences.io), 0, licences.err.join('\n'));
    t.equal(licences.out.length, 1, 'only the header: no licence yet');
  });

  await t.test('rotate-key re-wraps the data key in the database', async (t) => {
    const next = path.join(dir, 'next.key');
    const c = capture();
    t.equal(await main(['rotate-key', '--new-key-file', next, '--config', ini(url)], c.io), 0, c.err.join('\n'));
    t.ok(fs.existsSync(next), 'the new key file is written');
    const store = await openPostgresStore(postgresSettings(url), { keyFile: next });
    t.ok((await store.apiKeys.list()).length >= 1, 'the new file opens the database');
    await store.close();
    await t.rejects(openPostgresStore(postgresSettings(url), { keyFile }), StoreKeyError, 'the old file no longer does');
  });

  await t.test('migrate refuses one database as both source and target (exit 2), touching nothing', async (t) => {
    const c = capture();
    const file = ini(url);
    t.equal(await main(['migrate', '--from', file, '--to', file], c.io), 2);
    t.match(c.err.join('\n'), /--from and --to name the same store/);
  });

  await t.test('migrate from an LMDB store that does not exist: exit 2, and no folder is made', async (t) => {
    const c = capture();
    const missing = path.join(dir, 'no-such-store');
    const from = path.join(dir, 'missing-source.ini');
    fs.writeFileSync(from, `[server]\nmode = cloud\n[storage]\npath = ${missing}\n`);
    t.equal(await main(['migrate', '--from', from, '--to', ini(url)], c.io), 2);
    t.match(c.err.join('\n'), /--from: no store at/);
    t.notOk(fs.existsSync(missing), 'nothing created');
  });

  await t.test('an unreachable database: exit 69 (EX_UNAVAILABLE) within the connect timeout', async (t) => {
    const c = capture();
    const started = performance.now();
    t.equal(await main(['keys', 'list', '--config', ini('postgres://face_check@127.0.0.1:1/none')], c.io), 69);
    t.ok(performance.now() - started < 5_000, 'fails fast');
    t.match(c.err.join('\n'), /database unavailable/);
  });
}
