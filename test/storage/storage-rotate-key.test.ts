// Renewability: rotate-key re-wraps the store's data key under a new key file. Afterwards the old key no
// longer opens the store, the new one does, every record reads back the same and its sealed bytes are
// unchanged (only the wrapped data key changed); the gallery snapshots, which carry the previous wrap, are
// removed; a rotation that stopped half-way is finished or ignored.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import t, { type Test } from 'tap';

import { main } from '../../src/cli/main';
import { Galleries } from '../../src/matching/galleries';
import { snapshotFileName, snapshotPlaceOf } from '../../src/matching/snapshot/place';
import { SnapshotScheduler } from '../../src/matching/snapshot/scheduler';
import { lockStore } from '../../src/storage/lmdb/process-lock';
import { openStore, DEFAULT_KEY_FILE, type Store } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';
import { FAKE_MODEL_ID, templateFor } from '../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
const NOW = '2024-01-01T00:00:00.000Z';
const SEALED_DBS = ['templates', 'images', 'service-keys'];

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

const image = (i: number) => crypto.createHash('shake256', { outputLength: 1500 }).update(`img ${i}`).digest();

async function fill(store: Store): Promise<string> {
  await store.persons.createMany('acc', Array.from({ length: 40 }, (_, i) => ({
    personId: `p${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: image(i),
  })), NOW);
  return (await store.serviceKeys.responseSigning()).privateKey;
}

/** Raw bytes of every sealed value and of the wrapped data key (the store must be closed). */
async function raw(dir: string): Promise<{ values: Map<string, string>; wrapped: Buffer }> {
  const env = open({ path: dir, compression: false, readOnly: true });
  const values = new Map<string, string>();
  for (const name of SEALED_DBS) {
    const db = env.openDB<Buffer, string>({ name, encoding: 'binary' });
    for (const { key, value } of db.getRange()) values.set(JSON.stringify([name, key]), Buffer.from(value).toString('hex'));
  }
  const wrapped = Buffer.from(env.openDB<Uint8Array, string>({ name: 'meta' }).get('data-key')!);
  await env.close();
  return { values, wrapped };
}

async function readsBack(t: Test, store: Store, pem: string): Promise<void> {
  let ok = 0;
  for (let i = 0; i < 40; i++) {
    const p = store.persons.get('acc', `p${i}`);
    if (p && p.template.every((v, k) => v === templateFor(i, 0, 1)[k]) && store.persons.referenceImage('acc', `p${i}`)!.equals(image(i))) ok++;
  }
  t.equal(ok, 40, 'every person reads back identical');
  t.equal((await store.serviceKeys.responseSigning()).privateKey, pem, 'the private key reads back');
}

t.test('store.rotateKey: old key refused, new key opens, sealed records unchanged, old wrap gone from the file', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  const keyFile = path.join(db, DEFAULT_KEY_FILE);
  let store = await openStore(db);
  const pem = await fill(store);
  await store.close();
  const before = await raw(db);
  const oldKey = fs.readFileSync(keyFile);

  store = await openStore(db);
  t.equal(await store.rotateKey(), keyFile, 'default: the same key file');
  await readsBack(t, store, pem);  // the open store keeps working
  await store.close();
  const newKey = fs.readFileSync(keyFile);
  t.equal(newKey.length, 32);
  t.notOk(newKey.equals(oldKey), 'a new key');
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
  t.same(fs.readdirSync(db).filter((f) => f.endsWith('.tmp')), [], 'no temporary key file left');

  store = await openStore(db);  // alone: compacts
  await readsBack(t, store, pem);
  await store.close();
  const after = await raw(db);
  t.same(after.values, before.values, 'no sealed record changed');
  t.notOk(after.wrapped.equals(before.wrapped), 'the wrapped data key changed');
  t.equal(fs.readFileSync(path.join(db, 'data.mdb')).indexOf(before.wrapped), -1, 'the old wrap is not left in a freed page');

  const oldFile = path.join(dir, 'old.key');
  fs.writeFileSync(oldFile, oldKey, { mode: 0o600 });
  await t.rejects(openStore(db, { keyFile: oldFile }), { name: 'StoreKeyError', message: /does not open this store/ }, 'the old key stops working');
});

t.test('face-check rotate-key [--new-key-file]: the ini key_file, another file, the store lock', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'test.ini');
  fs.writeFileSync(ini, '[server]\nport = 0\n[storage]\npath = ./db\nkey_file = ./secrets/store.key\n');
  const db = path.join(dir, 'db');
  const configured = path.join(dir, 'secrets', 'store.key');

  const missing = capture();
  t.equal(await main(['rotate-key', '--config', ini], missing.io), 1, 'no store yet');
  t.match(missing.err[0], /no store at/);

  t.equal(await main(['keys', 'create', '--config', ini], capture().io), 0);
  t.ok(fs.existsSync(configured), 'the configured key file was made');
  t.notOk(fs.existsSync(path.join(db, DEFAULT_KEY_FILE)), 'not the default one');
  let store = await openStore(db, { keyFile: configured });
  const pem = await fill(store);
  // A gallery snapshot, as a service leaves it: its header carries the data key as the key file wraps it.
  const galleries = Galleries.forStore(store.persons);
  await galleries.restore(store.persons, MODEL, snapshotPlaceOf(store));
  await new SnapshotScheduler({
    galleries, persons: store.persons, exclusive: store.exclusive, modelId: MODEL, place: snapshotPlaceOf(store),
    log: { info: () => undefined, warn: () => undefined },
    settings: { intervalS: 3600, minChanges: 1, stopTimeoutS: 60, changeLogKeep: 1_000 },
  }).writeNow('acc');
  galleries.close();
  const snapshots = snapshotPlaceOf(store).dir;
  const wrapBefore = Buffer.from(store.dataKeyWrap()!).toString('base64');
  t.ok(fs.readFileSync(path.join(snapshots, snapshotFileName('acc'))).includes(wrapBefore), 'the snapshot carries the wrap');
  fs.writeFileSync(path.join(snapshots, `${snapshotFileName('acc')}.tmp-1-abcd`), 'left by a crash');
  await store.close();
  const before = await raw(db);
  const firstKey = fs.readFileSync(configured);

  const lock = lockStore(db, 'serve');
  const busy = capture();
  t.equal(await main(['rotate-key', '--config', ini], busy.io), 75, 'refused while the service holds the store');
  t.match(busy.err[0], /in use by face-check serve/);
  lock.release();

  const r = capture();
  t.equal(await main(['rotate-key', '--config', ini], r.io), 0);
  t.match(r.out[0], new RegExp(`wrapped by the key in ${configured}`));
  t.match(r.out.join('\n'), /removed 2 gallery snapshots \(they carried the previous wrap\); the next start rebuilds the galleries from the store/);
  t.same(fs.readdirSync(snapshots), [], 'no snapshot is left to carry the previous wrap');
  const secondKey = fs.readFileSync(configured);
  t.notOk(secondKey.equals(firstKey));
  t.notMatch([...r.out, ...r.err].join('\n'), secondKey.toString('hex'), 'the key is never printed');
  t.notMatch([...r.out, ...r.err].join('\n'), secondKey.toString('base64'));

  const elsewhere = path.join(dir, 'new', 'next.key');
  const m = capture();
  t.equal(await main(['rotate-key', '--config', ini, '--new-key-file', elsewhere], m.io), 0);
  t.match(m.out.join('\n'), new RegExp(`set \\[storage\\] key_file = ${elsewhere}`));
  t.equal(fs.statSync(elsewhere).mode & 0o777, 0o600);
  await t.rejects(openStore(db, { keyFile: configured }), /does not open this store/, 'the previous key file no longer opens it');
  store = await openStore(db, { keyFile: elsewhere });
  await readsBack(t, store, pem);
  await store.close();
  t.same((await raw(db)).values, before.values, 'two rotations: still no sealed record changed');

  const usage = capture();
  t.equal(await main(['rotate-key', '--config', ini, '--new-key-file'], usage.io), 2);
});

t.test('rotate-key says which snapshot it could not remove, and exits 1 (the rotation itself is done)', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'test.ini');
  fs.writeFileSync(ini, '[server]\nport = 0\n[storage]\npath = ./db\n');
  const db = path.join(dir, 'db');
  const store = await openStore(db);
  await fill(store);
  const keyBefore = fs.readFileSync(store.keyFile);
  await store.close();
  const snapshots = path.join(db, 'index-snapshots');
  fs.mkdirSync(path.join(snapshots, 'stuck.snap'), { recursive: true });  // a directory: it cannot be overwritten
  fs.writeFileSync(path.join(snapshots, 'other.snap'), 'a snapshot');
  const r = capture();
  t.equal(await main(['rotate-key', '--config', ini], r.io), 1);
  t.match(r.out.join('\n'), /removed 1 gallery snapshot \(/);
  t.match(r.err.join('\n'), /could not remove the gallery snapshot .*stuck\.snap \(EISDIR\): delete it by hand/);
  t.notOk(fs.readFileSync(path.join(db, DEFAULT_KEY_FILE)).equals(keyBefore), 'the key was rotated all the same');
});

t.test('a rotation that stopped after writing its key file is finished by the new key; the old key still works before', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  const copy = path.join(dir, 'copy');
  let store = await openStore(db);
  const pem = await fill(store);
  await store.close();
  fs.cpSync(db, copy, { recursive: true });  // the store as it was before the rotation
  const oldKey = path.join(dir, 'old.key');
  fs.copyFileSync(path.join(db, DEFAULT_KEY_FILE), oldKey);

  store = await openStore(db);
  const newKey = path.join(dir, 'new.key');
  await store.rotateKey(newKey);
  await store.close();
  const { wrapped: next } = await raw(db);

  // The copy as a crash would leave it: the new wrap stored as pending, the new key file written, no commit.
  const env = open({ path: copy, compression: false });
  await env.openDB<unknown, string>({ name: 'meta' }).put('data-key-next', next);
  await env.close();
  fs.cpSync(copy, path.join(dir, 'copy2'), { recursive: true });

  store = await openStore(path.join(dir, 'copy2'), { keyFile: oldKey });
  await readsBack(t, store, pem);
  await store.close();
  t.pass('before the commit the old key still opens it');

  store = await openStore(copy, { keyFile: newKey });
  await readsBack(t, store, pem);
  await store.close();
  await t.rejects(openStore(copy, { keyFile: oldKey }), /does not open this store/, 'once the new key opened it, the old one is done');

  // A key file that cannot be written: the rotation fails and the old key keeps working.
  const blocked = path.join(dir, 'a-file');
  fs.writeFileSync(blocked, 'x');
  store = await openStore(db, { keyFile: newKey });
  await t.rejects(store.rotateKey(path.join(blocked, 'k.key')), { name: 'StoreKeyError', message: /cannot be written .* the old key still opens the store/ });
  await store.close();
  store = await openStore(db, { keyFile: newKey });
  await readsBack(t, store, pem);
  await store.close();
});
