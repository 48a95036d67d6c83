// The PostgreSQL store's data key and sealing: two nodes opening one database together with the same key file
// agree on one data key, and what one seals the other opens; a missing or wrong key file is refused; no
// template, reference image, private key, licence key or shared secret reaches the database in clear (every
// row of every table is searched for them); a sealed value moved to another row does not open; a key
// rotation makes the new file open the store and the old one not. Persons: every write is in the change log,
// in order, and the rebuild's template blocks and the listing return exactly what was written.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SealError } from '../../../src/storage/crypto/aead';
import { StoreKeyError } from '../../../src/storage/crypto/key-file';
import { changesAfter } from '../../../src/storage/postgres/change-log';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

function randomTemplate(dimension = 512): Float32Array {
  const v = Float32Array.from({ length: dimension }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);

  const url = await pg.createDatabase('sealed');
  const keyFile = path.join(dir, 'node.key');
  const open = (file = keyFile) => openPostgresStore(postgresSettings(url, { poolSize: 4 }), { keyFile: file });
  // Two nodes starting together on an empty database: one key file made, one wrap stored, both unwrap it.
  const [a, b] = await Promise.all([open(), open()]);
  t.teardown(async () => { await a.close(); await b.close(); });

  const template = randomTemplate();
  const image = crypto.randomBytes(4096);

  await t.test('what one node seals, the other opens', async (t) => {
    t.equal(fs.statSync(keyFile).size, 32);
    t.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    const created = await a.persons.create('acme', 'alice', { modelId: 'm1', template, referenceImage: image }, '2024-05-01T10:00:00.000Z');
    t.ok(created.created);
    const seen = await b.persons.get('acme', 'alice');
    t.same(seen && Array.from(seen.template), Array.from(template), 'template');
    t.same(hex((await b.persons.referenceImage('acme', 'alice'))!), hex(image), 'reference image');
    t.same(await b.persons.meta('acme', 'alice'),
      { personId: 'alice', created: '2024-05-01T10:00:00.000Z', updated: '2024-05-01T10:00:00.000Z', modelId: 'm1' });
    t.equal((await a.serviceKeys.responseSigning()).privateKey, (await b.serviceKeys.responseSigning()).privateKey,
      'one response-signing key for both');
    t.same(await a.settings.secret('csrf', 32), await b.settings.secret('csrf', 32), 'one shared secret for both');
  });

  await t.test('a missing or wrong key file is refused, and no key is made for the database', async (t) => {
    const missing = path.join(dir, 'absent.key');
    await t.rejects(open(missing), StoreKeyError);
    await t.rejects(open(missing), /missing/);
    t.notOk(fs.existsSync(missing), 'no new key file');
    const wrong = path.join(dir, 'wrong.key');
    fs.writeFileSync(wrong, crypto.randomBytes(32), { mode: 0o600 });
    await t.rejects(open(wrong), /does not open/);
  });

  await t.test('nothing biometric or secret is stored in clear', async (t) => {
    const { privateKey } = await a.serviceKeys.responseSigning();
    const licence = await a.licences.create({ accountId: 'acme', label: 'gate', grants: ['identify'], limits: { maxPersons: null }, expires: null },
      { now: new Date(), maxLicences: 0 });
    if (licence.outcome !== 'created') throw new Error(licence.outcome);
    const secret = await a.settings.secret('csrf', 32);
    const pemBody = privateKey.split('\n')[5];
    const needles: Record<string, string[]> = {
      template: [hex(new Uint8Array(template.buffer).subarray(64, 96))],
      image: [hex(image.subarray(1000, 1032))],
      'private key': [hex(Buffer.from(pemBody, 'utf8')), pemBody],
      'licence key': [hex(Buffer.from(licence.licenceKey, 'utf8')), licence.licenceKey],
      secret: [hex(secret)],
    };
    const { rows: tables } = await a.pool.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
    let text = '';
    for (const { name } of tables) {
      const { rows } = await a.pool.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`);
      text += rows.map((r) => r.row).join('\n');
    }
    t.ok(text.length > 10_000, `searched ${tables.length} tables, ${text.length} characters`);
    for (const [what, forms] of Object.entries(needles)) {
      for (const form of forms) t.notOk(text.includes(form), `${what} not in clear`);
    }
    t.ok(text.includes(hex(Buffer.from('acme'))) || text.includes('acme'), 'the search does find what is stored (account id)');
    t.equal(await a.licences.openKey(licence.record), licence.licenceKey, 'the sealed licence key opens');
  });

  await t.test('a sealed value moved to another row does not open there', async (t) => {
    await a.persons.create('acme', 'bob', { modelId: 'm1', template: randomTemplate(), referenceImage: crypto.randomBytes(100) },
      new Date().toISOString());
    await a.pool.query(`UPDATE persons SET sealed_image = (SELECT sealed_image FROM persons WHERE person_id = 'alice'),
      sealed_template = (SELECT sealed_template FROM persons WHERE person_id = 'alice') WHERE person_id = 'bob'`);
    await t.rejects(b.persons.referenceImage('acme', 'bob'), SealError);
    await t.rejects(b.persons.get('acme', 'bob'), SealError);
    await a.pool.query("UPDATE persons SET model_id = 'm2' WHERE person_id = 'alice'");
    await t.rejects(b.persons.get('acme', 'alice'), SealError, 'a template relabelled with another model does not open');
    await a.pool.query("UPDATE persons SET model_id = 'm1' WHERE person_id = 'alice'");
    await a.pool.query("DELETE FROM persons WHERE person_id = 'bob'");
  });

  await t.test('rotating the key: the new file opens the database, the old one no longer does', async (t) => {
    const fresh = path.join(dir, 'rotated.key');
    t.equal(await a.rotateKey(fresh), fresh);
    const { rows } = await a.pool.query<{ key: string }>('SELECT key FROM meta ORDER BY key');
    t.same(rows.map((r) => r.key), ['data-key'], 'no pending wrap left');
    await t.rejects(open(keyFile), /does not open/);
    const c = await open(fresh);
    t.teardown(() => c.close());
    t.same(Array.from((await c.persons.get('acme', 'alice'))!.template), Array.from(template), 'nothing re-encrypted, all opens');
  });

  await t.test('persons: every write in the change log in order; blocks and listing return what was written', async (t) => {
    const store: PostgresStore = a;
    const from = await store.changes.lastChange();
    const now = '2024-06-01T00:00:00.000Z';
    const t1 = randomTemplate(), t2 = randomTemplate(), t3 = randomTemplate(256);
    t.same(await store.persons.create('acme', 'alice', { modelId: 'm1', template: t1, referenceImage: image }, now), { created: false },
      'an existing id is not created again');
    const replaced = await store.persons.replace('acme', 'alice', { modelId: 'm1', template: t1, referenceImage: image }, now);
    t.equal(replaced?.created, '2024-05-01T10:00:00.000Z', 'created kept');
    t.equal(replaced?.updated, now);
    t.equal(await store.persons.setTemplate('acme', 'alice', 'm2', t2), true);
    t.equal(await store.persons.setTemplate('acme', 'nobody', 'm2', t2), false);
    t.same(Array.from((await store.persons.get('acme', 'alice'))!.template), Array.from(t2));
    const removed = await store.persons.remove('acme', 'alice');
    t.same(removed && Array.from(removed.template), Array.from(t2), 'remove returns the template it removed');
    t.equal(await store.persons.remove('acme', 'alice'), undefined);
    // Over several pages (1000 rows) and blocks (1024 persons), two accounts, two models, two dimensions.
    const many = (account: string, n: number, modelId: string, dim: number) => Array.from({ length: n }, (_, i) => (
      { personId: `${account}-${String(i).padStart(5, '0')}`, modelId, template: dim === 256 ? t3 : randomTemplate(dim), referenceImage: Buffer.from([i & 255]) }));
    const acme = many('acme', 1500, 'm1', 512);
    const beta = [...many('beta', 700, 'm1', 512), ...many('beta-x', 30, 'm2', 256)];
    t.same(await store.persons.createMany('acme', [...acme, acme[0]], now), { created: 1500, skipped: [acme[0].personId] });
    t.same(await store.persons.createMany('beta', beta, now), { created: 730, skipped: [] });
    t.same(await store.persons.createMany('beta', beta.slice(0, 2), now), { created: 0, skipped: beta.slice(0, 2).map((p) => p.personId) });
    t.equal(await store.persons.count(), 2230);
    t.equal(await store.persons.count('beta'), 730);

    const changes = await changesAfter(store.pool, from, 10_000);
    t.same(changes.slice(0, 4).map((c) => [c.op, c.personId, c.modelId]),
      [['replace', 'alice', 'm1'], ['template', 'alice', 'm2'], ['remove', 'alice', 'm2'], ['create', 'acme-00000', 'm1']]);
    t.equal(changes.length, 3 + 2230, 'one change per write, none for refused ones');
    t.ok(changes.every((c, i) => i === 0 || c.seq > changes[i - 1].seq), 'ascending seq');

    const blocks = [];
    for await (const block of b.persons.templateBlocks('m1')) blocks.push({ ...block, bytes: Buffer.from(block.bytes) });
    t.same(blocks.map((x) => [x.accountId, x.ids.length]), [['acme', 1024], ['acme', 476], ['beta', 700]]);
    const expected = new Map([...acme, ...beta].map((p) => [p.personId, p.template]));
    let same = 0;
    for (const block of blocks) {
      block.ids.forEach((id, i) => {
        const got = new Float32Array(block.bytes.buffer.slice(block.bytes.byteOffset + i * 2048, block.bytes.byteOffset + (i + 1) * 2048));
        if (hex(new Uint8Array(got.buffer)) === hex(new Uint8Array(expected.get(id)!.buffer))) same++;
      });
    }
    t.equal(same, 2200, 'every m1 template, byte for byte, under its id');
    const m2 = [];
    for await (const block of b.persons.templateBlocks('m2')) m2.push(block);
    t.same(m2.map((x) => [x.accountId, x.ids.length, x.dimension]), [['beta', 30, 256]]);
    const listed = [];
    for await (const p of b.persons.all()) listed.push(`${p.accountId}/${p.personId}`);
    t.equal(listed.length, 2230);
    t.equal(new Set(listed).size, 2230, 'no person listed twice across pages');

    const picked = await b.persons.templatesOf('beta', ['beta-x-00000', 'nobody', 'beta-00001']);
    t.same(picked.map((x) => x && Array.from(x)), [Array.from(t3), undefined, Array.from(beta[1].template)], 'templatesOf, in order');
    const betaBlocks = [];
    for await (const block of b.persons.templateBlocks('m1', 'beta')) betaBlocks.push([block.accountId, block.ids.length]);
    t.same(betaBlocks, [['beta', 700]], 'one account\'s blocks');
    t.same(await b.persons.accountsWithTemplates('m1'), ['acme', 'beta']);
    t.same(await b.persons.accountsWithTemplates('m2'), ['beta']);
    t.equal(await b.persons.templateCount('m1', 'acme'), 1500);
    t.equal(await b.persons.templateCount('m2', 'beta'), 30);
  });

  await t.test('the change log: heads, covers, pruning by count and by time', async (t) => {
    const log = b.changes;
    const last = await log.lastChange();
    t.equal(await log.accountHead('beta'), last, 'beta wrote last');
    const acmeHead = await log.accountHead('acme');
    t.ok(acmeHead > 0 && acmeHead < last);
    t.equal(await log.accountHead('nobody'), 0);
    const size = await log.size();
    t.ok(size >= 2233, `${size} entries`);
    t.equal(await log.covers(0), true, 'nothing pruned yet');
    t.equal(await log.covers(last + 1), false, 'a position ahead of the log');
    const tail = [];
    for await (const c of log.changesSince(last - 3)) tail.push(c.seq);
    t.same(tail, [last - 2, last - 1, last]);
    const pageCrossing = [];
    for await (const c of log.changesSince(0, 2000)) pageCrossing.push(c.seq);
    t.equal(pageCrossing.length, 2000, 'a limit over several pages');

    t.equal(await log.prune(100), size - 100);
    t.equal(await log.size(), 100);
    t.equal(await log.oldestKept(), last - 99);
    t.equal(await log.covers(last - 200), false, 'a reader that far behind must rebuild');
    t.equal(await log.covers(last - 100), true);
    t.equal(await log.accountHead('acme'), acmeHead, 'heads outlive their entries');
    t.equal(await log.lastChange(), last);
    t.equal(await log.pruneBefore(new Date(Date.now() + 60_000)), 100);
    t.equal(await log.size(), 0);
    t.equal(await log.lastChange(), last, 'an emptied log still continues after what it held');
    t.equal(await log.covers(last), true);
  });
}
