// LMDB is the source of truth: persons per account with template, model id and the original
// image; API keys stored hashed; quota counters that never overshoot; everything survives a reopen.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { hashKey } from '../../src/storage/records';
import { openStore } from '../../src/storage/lmdb/store';
import { templateFor, FAKE_MODEL_ID, OTHER_MODEL_IDS } from '../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
import { tempDir } from '../helpers/app';

const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('persons: create, get, replace, remove; per account; survives reopen', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  const image = Buffer.from('original image bytes');
  const t1 = '2024-01-02T03:04:05.678Z';
  const created = await store.persons.create('acc', 'p1', { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: image }, t1);
  t.ok(created.created);
  t.same((await store.persons.create('acc', 'p1', { modelId: MODEL, template: templateFor(2, 0, 1), referenceImage: image }, t1)).created, false, 'no overwrite');
  t.equal(store.persons.get('other', 'p1'), undefined, 'another account does not see it');
  const p = store.persons.get('acc', 'p1')!;
  t.same([p.personId, p.created, p.updated, p.modelId], ['p1', t1, t1, MODEL]);
  t.match(p.created, ISO_MS_Z);
  t.same(Array.from(p.template), Array.from(templateFor(1, 0, 1)), 'template bytes round-trip');
  t.same(store.persons.referenceImage('acc', 'p1'), image, 'the original image is kept');

  const t2 = '2024-02-02T00:00:00.000Z';
  const replaced = await store.persons.replace('acc', 'p1', { modelId: OTHER_MODEL_IDS[0], template: templateFor(3, 0, 1), referenceImage: Buffer.from('new') }, t2);
  t.same([replaced!.created, replaced!.updated, replaced!.modelId], [t1, t2, OTHER_MODEL_IDS[0]]);
  t.equal(await store.persons.replace('acc', 'nobody', { modelId: MODEL, template: templateFor(3, 0, 1), referenceImage: image }, t2), undefined);
  t.ok(await store.persons.setTemplate('acc', 'p1', OTHER_MODEL_IDS[1], templateFor(4, 0, 1)));
  t.same(store.persons.get('acc', 'p1')!.updated, t2, 'reindex keeps updated');
  t.equal(store.persons.count('acc'), 1);
  t.equal(store.persons.count('ac'), 0, 'account prefix does not leak');

  await store.close();
  store = await openStore(dir);
  const again = store.persons.get('acc', 'p1')!;
  t.same([again.created, again.updated, again.modelId], [t1, t2, OTHER_MODEL_IDS[1]]);
  t.same(store.persons.referenceImage('acc', 'p1'), Buffer.from('new'));
  t.same([...store.persons.all()].map((x) => [x.accountId, x.personId]), [['acc', 'p1']]);

  const removed = await store.persons.remove('acc', 'p1');
  t.equal(removed?.personId, 'p1');
  t.equal(store.persons.get('acc', 'p1'), undefined);
  t.equal(store.persons.referenceImage('acc', 'p1'), undefined, 'image removed with the person');
  t.equal(await store.persons.remove('acc', 'p1'), undefined);
  await store.close();
});

t.test('concurrent creates of one id: exactly one wins', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const input = { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: Buffer.from('x') };
  const results = await Promise.all(Array.from({ length: 8 }, () => store.persons.create('a', 'same', input, new Date().toISOString())));
  t.equal(results.filter((r) => r.created).length, 1);
});

t.test('API keys: stored by sha256 only, looked up, listed, revoked', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.ok(store.apiKeys.isEmpty());
  const { key, record } = await store.apiKeys.create('acme', 'match', 'gate 1', '2024-01-01T00:00:00.000Z');
  t.match(key, /^fc_[A-Za-z0-9_-]{32}$/);
  t.equal(record.keyId, hashKey(key).slice(0, 12));
  t.same(store.apiKeys.lookup(key), record);
  t.equal(store.apiKeys.lookup(`${key}x`), undefined);
  t.notOk(store.apiKeys.isEmpty());
  t.same(store.apiKeys.list().map((k) => k.keyId), [record.keyId]);
  t.ok(await store.apiKeys.revoke(record.keyId, '2024-01-02T00:00:00.000Z'));
  t.equal(store.apiKeys.lookup(key)!.revoked, '2024-01-02T00:00:00.000Z');
  t.notOk(await store.apiKeys.revoke('000000000000', '2024-01-02T00:00:00.000Z'));
  await store.close();
  // The key in clear appears nowhere in the database files.
  for (const f of fs.readdirSync(dir)) {
    t.notOk(fs.readFileSync(path.join(dir, f)).includes(Buffer.from(key)), `${f} has no clear key`);
  }
});

t.test('quota: counts to the limit, never beyond, per account and day', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const results = await Promise.all(Array.from({ length: 10 }, () => store.quota.tryConsume('a', '2024-01-01', 4)));
  t.equal(results.filter(Boolean).length, 4);
  t.equal(store.quota.used('a', '2024-01-01'), 4);
  t.ok(await store.quota.tryConsume('a', '2024-01-02', 4), 'a new day');
  t.ok(await store.quota.tryConsume('b', '2024-01-01', 4), 'another account');
});

t.test('range reads hold for ids of every length the service accepts (ordered-binary writes long strings raw)', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(dir);
  t.teardown(() => store.close());
  const now = '2024-01-01T00:00:00.000Z';
  for (const length of [1, 62, 63, 64]) {
    const account = 'a'.repeat(length);
    const longer = `${account}b`;
    for (let i = 0; i < 40; i++) {
      await store.persons.create(account, `p${i}`.padEnd(64, 'x'), { modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: Buffer.from('i') }, now);
    }
    await store.persons.create(longer, 'q', { modelId: MODEL, template: templateFor(99, 0, 1), referenceImage: Buffer.from('i') }, now);
    t.equal(store.persons.count(account), 40, `count of a ${length}-character account`);
    const blocks = [...store.persons.templateBlocks(MODEL)].filter((b) => b.accountId === account);
    t.same(blocks.map((b) => b.ids.length), [32, 8], `its segments are found (${length} characters)`);
  }
  t.equal([...store.persons.templateBlocks(OTHER_MODEL_IDS[0])].length, 0, 'another model reads nothing');
  const all = [...store.persons.templateBlocks(MODEL)].reduce((n, b) => n + b.ids.length, 0);
  t.equal(all, 4 * 41, 'every template of the model is read back');
});
