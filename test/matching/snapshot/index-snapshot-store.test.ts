// Storage schema 4, what the gallery snapshots rest on: every person write keeps a sealed template row, the
// per-account template count and the change log in its own transaction; the log's queries and pruning; the
// resumable migration of a schema-3 store (rows and counts written from the segments).
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { open } from 'lmdb';
import t from 'tap';

import { DataKeySealer, type Sealer } from '../../../src/storage/crypto/sealer';
import { unlockDataKey } from '../../../src/storage/crypto/data-key';
import { PersonRepository } from '../../../src/storage/lmdb/persons';
import { DEFAULT_KEY_FILE, openStore, SCHEMA_VERSION } from '../../../src/storage/lmdb/store';
import { writeTemplateRows } from '../../../src/storage/lmdb/template-rows-migration';
import { tempDir } from '../../helpers/app';
import { FAKE_MODEL_ID, OTHER_MODEL_IDS, templateFor } from '../../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
const NOW = '2024-01-01T00:00:00.000Z';
const img = Buffer.from('image');
const same = (a: Float32Array | undefined, b: Float32Array) => !!a && a.length === b.length && a.every((v, i) => v === b[i]);

t.test('every write keeps rows, counts and the change log; the log answers and prunes', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const p = store.persons;
  const log = store.changes;
  t.equal(log.lastChange(), 0, 'a new store has no change');
  t.equal(log.covers(0), true);

  await p.create('a', 'p1', { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: img }, NOW);
  await p.createMany('a', [2, 3, 4].map((i) => ({ personId: `p${i}`, modelId: MODEL, template: templateFor(i, 0, 1), referenceImage: img })), NOW);
  await p.create('b', 'q1', { modelId: MODEL, template: templateFor(9, 0, 1), referenceImage: img }, NOW);
  t.equal(log.lastChange(), 5);
  t.same([...log.changesSince(0)].map((c) => [c.seq, c.accountId, c.personId]),
    [[1, 'a', 'p1'], [2, 'a', 'p2'], [3, 'a', 'p3'], [4, 'a', 'p4'], [5, 'b', 'q1']], 'one entry per person, in commit order');
  t.same([p.templateCount(MODEL, 'a'), p.templateCount(MODEL, 'b')], [4, 1]);
  const rows = p.templatesOf('a', ['p3', 'nobody', 'p1', 'q1']);
  t.ok(same(rows[0], templateFor(3, 0, 1)) && same(rows[2], templateFor(1, 0, 1)), 'rows read back in the order asked');
  t.same([rows[1], rows[3]], [undefined, undefined], 'unknown persons and another account\'s person are undefined');

  await p.replace('a', 'p2', { modelId: MODEL, template: templateFor(7, 0, 1), referenceImage: img }, NOW);
  t.ok(same(p.templatesOf('a', ['p2'])[0], templateFor(7, 0, 1)), 'replace rewrites the row');
  await p.replace('a', 'p3', { modelId: OTHER_MODEL_IDS[0], template: templateFor(8, 0, 1), referenceImage: img }, NOW);
  t.same([p.templateCount(MODEL, 'a'), p.templateCount(OTHER_MODEL_IDS[0], 'a')], [3, 1], 'a model change moves the count');
  t.ok(await p.setTemplate('a', 'p3', MODEL, templateFor(10, 0, 1)));
  t.ok(same(p.templatesOf('a', ['p3'])[0], templateFor(10, 0, 1)), 'setTemplate rewrites the row');
  t.same([p.templateCount(MODEL, 'a'), p.templateCount(OTHER_MODEL_IDS[0], 'a')], [4, 0]);
  t.same(p.accountsWithTemplates(OTHER_MODEL_IDS[0]), [], 'an account without templates of a model is not listed');
  await p.remove('a', 'p4');
  t.same(p.templatesOf('a', ['p4']), [undefined], 'remove deletes the row');
  t.equal(p.templateCount(MODEL, 'a'), 3);
  t.same([...log.changesSince(5)].map((c) => c.personId), ['p2', 'p3', 'p3', 'p4'], 'replace, setTemplate and remove are logged');
  t.same([log.accountHead('a'), log.accountHead('b'), log.accountHead('nobody')], [9, 5, 0], 'the last change of each account');
  t.same([...log.changesSince(2, 2)].map((c) => c.seq), [3, 4], 'limit');

  // Failed writes (existing id, absent person) log nothing.
  t.notOk((await p.create('a', 'p1', { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: img }, NOW)).created);
  t.equal(await p.remove('a', 'nobody'), undefined);
  t.equal(log.lastChange(), 9);

  t.equal(await log.prune(1000), 0, 'nothing beyond the bound');
  t.equal(await log.prune(3, 2), 6, 'the oldest go first, in batches');
  t.same([...log.changesSince(0)].map((c) => c.seq), [7, 8, 9]);
  t.equal(log.oldestKept(), 7);
  t.same([log.covers(6), log.covers(5), log.covers(9), log.covers(10)], [true, false, true, false],
    'a reader at 6 can catch up; at 5 it missed 6; ahead of the log is another history');
  t.equal(p.count(), 4, 'count() without an account: every person (p1, p2, p3, q1)');
});

t.test('the counts and account listing hold for long and prefix-sharing account ids (fast-check against a model)', async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const accounts = ['x', 'xy', 'x'.repeat(63), 'x'.repeat(64), `${'x'.repeat(64)}y`, 'y'];
  const models = [MODEL, OTHER_MODEL_IDS[1]];
  const model = new Map<string, { account: string; model: string; seed: number }>();
  let seed = 0;
  await fc.assert(fc.asyncProperty(fc.array(fc.record({
    op: fc.constantFrom('create', 'replace', 'remove', 'createMany'),
    account: fc.constantFrom(...accounts), id: fc.integer({ min: 0, max: 40 }), model: fc.constantFrom(...models), n: fc.integer({ min: 1, max: 40 }),
  }), { maxLength: 30 }), async (ops) => {
    for (const o of ops) {
      const key = `${o.account}\n${o.id}`;
      if (o.op === 'create' && !model.has(key)) {
        await store.persons.create(o.account, `p${o.id}`, { modelId: o.model, template: templateFor(++seed, 0, 1), referenceImage: img }, NOW);
        model.set(key, { account: o.account, model: o.model, seed });
      } else if (o.op === 'replace' && model.has(key)) {
        await store.persons.replace(o.account, `p${o.id}`, { modelId: o.model, template: templateFor(++seed, 0, 1), referenceImage: img }, NOW);
        model.set(key, { account: o.account, model: o.model, seed });
      } else if (o.op === 'remove' && model.has(key)) {
        await store.persons.remove(o.account, `p${o.id}`);
        model.delete(key);
      } else if (o.op === 'createMany') {
        const items = Array.from({ length: o.n }, (_, k) => ({ personId: `m${o.id}-${k}`, modelId: o.model, template: templateFor(++seed, 0, 1), referenceImage: img }));
        const { skipped } = await store.persons.createMany(o.account, items, NOW);
        items.forEach((it, k) => { if (!skipped.includes(it.personId)) model.set(`${o.account}\n${it.personId}`, { account: o.account, model: o.model, seed: seed - o.n + 1 + k }); });
      }
    }
    for (const m of models) {
      const expected = accounts.filter((a) => [...model.values()].some((v) => v.account === a && v.model === m)).sort();
      if (JSON.stringify(store.persons.accountsWithTemplates(m).sort()) !== JSON.stringify(expected)) throw new Error(`accounts of ${m}`);
      for (const a of accounts) {
        const n = [...model.values()].filter((v) => v.account === a && v.model === m).length;
        if (store.persons.templateCount(m, a) !== n) throw new Error(`count of ${a} under ${m}: ${store.persons.templateCount(m, a)} != ${n}`);
      }
    }
    for (const [key, v] of model) {
      const personId = key.split('\n')[1].replace(/^(\d+)$/, 'p$1');
      if (!same(store.persons.templatesOf(v.account, [personId])[0], templateFor(v.seed, 0, 1))) throw new Error(`row of ${key}`);
    }
  }), { numRuns: 25 });
  t.pass('counts, accounts and rows follow every write');
});

/** Turns a store written by this program back into what schema 3 wrote: no rows, counts or change log. */
async function downgradeToSchema3(dir: string): Promise<void> {
  const env = open({ path: dir, compression: false, maxDbs: 32 });
  for (const name of ['template-rows', 'template-counts', 'changes', 'change-heads']) await env.openDB({ name }).drop();
  const meta = env.openDB<unknown, string>({ name: 'meta' });
  await meta.transaction(() => { meta.put('schema', 3); meta.remove('change-seq'); });
  await env.close();
}

t.test('a schema-3 store gets its rows and counts, resuming after an interruption', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  for (const account of ['a', 'b']) {
    await store.persons.createMany(account, Array.from({ length: 70 }, (_, i) => ({
      personId: `${account}${i}`, modelId: i % 10 === 0 ? OTHER_MODEL_IDS[0] : MODEL, template: templateFor(i + (account === 'a' ? 0 : 1000), 0, 1), referenceImage: img,
    })), NOW);
  }
  await store.close();
  await downgradeToSchema3(dir);

  // A first run stops after 3 segments' worth of rows (batches of one segment): two batches commit.
  const env = open({ path: dir, compression: false, maxDbs: 32 });
  const meta = env.openDB<unknown, string>({ name: 'meta' });
  const sealer = new DataKeySealer(await unlockDataKey(meta, path.join(dir, DEFAULT_KEY_FILE), dir, true));
  let rowsSealed = 0;
  const interrupted: Sealer = {
    seal: (db, key, plain) => {
      if (db === 'template-rows' && ++rowsSealed > 70) throw new Error('power cut');
      return sealer.seal(db, key, plain);
    },
    open: (db, key, sealed) => sealer.open(db, key, sealed),
  };
  await t.rejects(writeTemplateRows(env, meta, new PersonRepository(env, interrupted), 1), /power cut/);
  t.equal(meta.get('schema'), 3, 'still schema 3');
  t.ok(meta.get('template-rows-after'), 'progress recorded');
  const partial = env.openDB({ name: 'template-rows' }).getCount();
  t.ok(partial > 0 && partial < 140, `some rows written (${partial})`);
  await env.close();

  store = await openStore(dir);
  t.teardown(() => store.close());
  for (const account of ['a', 'b']) {
    const ids = Array.from({ length: 70 }, (_, i) => `${account}${i}`);
    const rows = store.persons.templatesOf(account, ids);
    t.ok(ids.every((id, i) => same(rows[i], store.persons.get(account, id)!.template)), `${account}: every row equals the segment's template`);
    t.equal(store.persons.templateCount(MODEL, account), 63, `${account}: the count of the model`);
    t.equal(store.persons.templateCount(OTHER_MODEL_IDS[0], account), 7, `${account}: the count of the other model`);
  }
  const env2 = open({ path: dir, compression: false, maxDbs: 32, readOnly: true });
  const meta2 = env2.openDB<unknown, string>({ name: 'meta' });
  t.same([meta2.get('schema'), meta2.get('template-rows-after'), meta2.get('compact-pending')], [SCHEMA_VERSION, undefined, undefined],
    'schema 4, migration finished, no compaction (nothing plain was left)');
  await env2.close();
  t.ok(store.changes.lastChange() >= 140, 'the migrated persons are in the change log');
});
