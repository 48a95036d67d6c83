// face-check migrate: an LMDB store's persons (templates of the installed model, images), accounts, API keys
// and response-signing key moved to PostgreSQL and back, proven by counts and per-account checksums on both
// sides; a second run copies nothing and still matches; a key made on LMDB authenticates on PostgreSQL.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { main } from '../src/cli';
import { templateModelId, templateSize } from '../src/engine/template-spec';
import { personChecksums } from '../src/ops/migrate-store';
import { lmdbAsyncStore } from '../src/storage/lmdb/async-store';
import { postgresSettings } from '../src/storage/postgres/pool';
import { openPostgresStore } from '../src/storage/postgres/store';
import { openStore } from '../src/storage/store';
import { tempDir } from './helpers/app';
import { postgresSkipReason, startPostgres } from './helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const MODEL = templateModelId();

function randomTemplate(): Float32Array {
  const v = Float32Array.from({ length: templateSize() }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

async function run(): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const url = await pg.createDatabase('moved');
  const pgKey = path.join(dir, 'cluster.key');
  fs.writeFileSync(pgKey, crypto.randomBytes(32), { mode: 0o600 });
  const ini = (name: string, storage: string[]) => {
    const file = path.join(dir, `${name}.ini`);
    fs.writeFileSync(file, ['[server]', 'mode = cloud', '[storage]', ...storage].join('\n'));
    return file;
  };
  const lmdbIni = ini('lmdb', ['path = ./lmdb']);
  const pgIni = ini('pg', ['path = ./node', 'backend = postgres', `postgres_url = ${url}`, `key_file = ${pgKey}`]);
  const backIni = ini('back', ['path = ./back']);

  // The source: two accounts' persons (one updated later), an operator account, two keys (one signing).
  const lmdb = lmdbAsyncStore(await openStore(path.join(dir, 'lmdb')));
  for (let i = 0; i < 25; i++) {
    const accountId = i % 3 ? 'acme' : 'default';
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    await lmdb.persons.create(accountId, `p${i}`, { modelId: MODEL, template: randomTemplate(), referenceImage: crypto.randomBytes(500 + i) }, at);
  }
  await lmdb.persons.replace('acme', 'p1', { modelId: MODEL, template: randomTemplate(), referenceImage: Buffer.from('newer') }, '2026-02-01T00:00:00.000Z');
  const now = new Date().toISOString();
  await lmdb.accounts.create({ accountId: 'acme', email: 'ops@acme.test', passwordHash: 'scrypt$x', role: 'operator', plan: 'paid', created: now, updated: now });
  const { key: plainKey } = await lmdb.apiKeys.create('acme', 'match', 'plain', now);
  const signer = await lmdb.serviceKeys.responseSigning();
  await lmdb.apiKeys.create('default', 'full', 'signed', now, signer.publicKey);
  const expected = await personChecksums(lmdb);
  await lmdb.close();

  await t.test('LMDB to PostgreSQL: everything copied, counts and checksums match', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', pgIni], c.io), 0, c.err.join('\n'));
    t.match(c.out.join('\n'), /persons: 25 copied, 0 already there, 0 failed/);
    t.match(c.out.join('\n'), /API keys: 2 copied/);
    t.match(c.out.join('\n'), /migrate: complete/);
    const target = await openPostgresStore(postgresSettings(url), { keyFile: pgKey });
    t.teardown(() => target.close());
    t.same(await personChecksums(target), expected, 'per-account counts and checksums equal the source\'s');
    t.equal((await target.apiKeys.lookup(plainKey))?.accountId, 'acme', 'a key made on LMDB authenticates on PostgreSQL');
    t.equal((await target.serviceKeys.responseSigning()).publicKey, signer.publicKey, 'the same response-signing key');
    t.equal((await target.persons.meta('acme', 'p1'))?.updated, '2026-02-01T00:00:00.000Z', 'updated kept');
    t.equal((await target.accounts.byEmail('ops@acme.test'))?.plan, 'paid');
    let blocks = 0;
    for await (const b of target.persons.templateBlocks(MODEL)) blocks += b.ids.length;
    t.equal(blocks, 25, 'every template is of the model and in the gallery rebuild');
  });

  await t.test('a second run copies nothing and still matches', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', pgIni], c.io), 0, c.err.join('\n'));
    t.match(c.out.join('\n'), /persons: 0 copied, 25 already there/);
    t.match(c.out.join('\n'), /API keys: 0 copied, 2 already there/);
    t.match(c.out.join('\n'), /response-signing key: present/);
  });

  await t.test('PostgreSQL back to a new LMDB store: the same checksums', async (t) => {
    const c = capture();
    t.equal(await main(['migrate', '--from', pgIni, '--to', backIni], c.io), 0, c.err.join('\n'));
    const back = lmdbAsyncStore(await openStore(path.join(dir, 'back')));
    t.teardown(() => back.close());
    t.same(await personChecksums(back), expected);
    t.equal((await back.apiKeys.lookup(plainKey))?.keyId, (await back.apiKeys.entries()).find((e) => e.record.label === 'plain')?.record.keyId);
  });

  await t.test('a differing target is reported, not hidden', async (t) => {
    const target = await openPostgresStore(postgresSettings(url), { keyFile: pgKey });
    const removed = await target.persons.remove('acme', 'p2');
    await target.persons.create('acme', 'p2', { modelId: MODEL, template: randomTemplate(), referenceImage: Buffer.from('other') }, removed!.created);
    await target.close();
    const c = capture();
    t.equal(await main(['migrate', '--from', lmdbIni, '--to', pgIni], c.io), 1);
    t.match(c.out.join('\n'), /account acme: \d+ person\(s\) DIFFER/);
    t.match(c.out.join('\n'), /INCOMPLETE/);
  });
}
