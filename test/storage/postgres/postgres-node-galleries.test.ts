// A PostgreSQL node's galleries are a cache of the database that answers on its own: built at start from
// every stored person (parallel COPY streams), a search re-ranks with the float32 copies the index keeps,
// so it answers with the database stopped and its top-1 score is the exact float32 cosine. The follower
// applies other writers' changes, a resync swaps rebuilt galleries in, and its status says where it stands.
// A template that does not open fails the start (never a gallery missing that person).
import crypto from 'node:crypto';
import t, { type Test } from 'tap';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { GalleryFollower } from '../../../src/matching/gallery-follower';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';
import { cosine, normalised } from '../../helpers/vectors';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const MODEL = templateModelId();
const DIM = templateSize();

function randomTemplate(): Float32Array {
  return normalised(Float32Array.from({ length: DIM }, () => Math.random() - 0.5));
}

async function run(): Promise<void> {
  const { pg, keyFile } = await postgresCluster(t);
  const open = () => openPostgresStore(postgresSettings(pg.url, { poolSize: 4, statementTimeoutMs: 1000, connectTimeoutMs: 500 }), { keyFile });
  const writer: PostgresStore = await open();
  t.teardown(() => writer.close());

  // 3,000 persons over three accounts, plus one of another model (stale) and one removed before the start.
  const templates = new Map<string, Float32Array>();
  const now = new Date().toISOString();
  const image = crypto.randomBytes(64);
  for (let a = 0; a < 3; a++) {
    const batch = Array.from({ length: 1000 }, (_, i) => {
      const template = randomTemplate();
      templates.set(`acc${a}/p${i}`, template);
      return { personId: `p${i}`, modelId: MODEL, template, referenceImage: image };
    });
    await writer.persons.createMany(`acc${a}`, batch, now);
  }
  await writer.persons.create('acc0', 'old-model', { modelId: `${MODEL}+old`, template: randomTemplate(), referenceImage: image }, now);
  await writer.persons.remove('acc1', 'p999');
  templates.delete('acc1/p999');

  const reader: PostgresStore = await open();
  t.teardown(() => reader.close());
  const follower = new GalleryFollower(reader, { modelId: MODEL, waitTimeoutMs: 2000, pollIntervalMs: 200 });
  t.teardown(() => follower.stop());

  await t.test('a node started over a populated database holds every person of its model', async (t) => {
    const counts = await follower.start();
    t.same(counts, { loaded: 2999, stale: 1 });
    t.same(Object.fromEntries(follower.galleries.sizes()), { acc0: 1000, acc1: 999, acc2: 1000 });
    let found = 0;
    for (const [key, template] of templates) {
      const [accountId, personId] = key.split('/');
      const [best] = await follower.galleries.of(accountId).search(template, 1, 0.5);
      if (best?.personId === personId) found++;
    }
    t.equal(found, templates.size, 'every person is found by its own template');
    t.equal((await follower.galleries.of('acc1').search(randomTemplate(), 5, 0.99)).length, 0, 'nothing above the floor for a stranger');
  });

  await t.test('changes written by another node are applied and the status says where the follower stands', async (t) => {
    const template = randomTemplate();
    await writer.persons.create('acc2', 'late', { modelId: MODEL, template, referenceImage: image }, now);
    await writer.persons.remove('acc2', 'p0');
    await follower.reach(await writer.changes.lastChange());
    t.equal((await follower.galleries.of('acc2').search(template, 1, 0.5))[0]?.personId, 'late');
    t.equal(follower.galleries.of('acc2').size, 1000, 'one added, one removed');
    const status = follower.status()!;
    t.equal(status.position, await writer.changes.lastChange(), 'position: the log\'s last change');
    t.equal(status.lastSeen, status.position, 'nothing seen that is not applied');
    t.equal(status.lagSeconds, 0, 'no lag when caught up');
    templates.set('acc2/late', template);
    templates.delete('acc2/p0');
  });

  await t.test('a log pruned past the node: rebuilt galleries are swapped in, the old ones serve meanwhile', async (t) => {
    await follower.stop();
    const again = new GalleryFollower(reader, { modelId: MODEL, waitTimeoutMs: 5000, pollIntervalMs: 100 });
    t.teardown(() => again.stop());
    await again.start();
    const gallery = again.galleries;
    // Written and pruned in one go while the follower is told nothing (no notification reaches it first).
    const template = randomTemplate();
    await writer.persons.create('acc0', 'after-prune', { modelId: MODEL, template, referenceImage: image }, now);
    await writer.changes.prune(1);
    await writer.persons.create('acc0', 'after-prune-2', { modelId: MODEL, template: randomTemplate(), referenceImage: image }, now);
    await again.reach(await writer.changes.lastChange());
    t.equal(again.galleries, gallery, 'the same Galleries object serves after the swap');
    t.equal((await again.galleries.of('acc0').search(template, 1, 0.5))[0]?.personId, 'after-prune');
    t.equal(again.galleries.of('acc1').size, 999, 'the other accounts rebuilt whole');
    t.ok(again.status()!.stats.resyncs <= 1, 'at most one resync');
  });

  await t.test('with the database stopped a search still answers, with the exact float32 cosine', async (t) => {
    const node = new GalleryFollower(reader, { modelId: MODEL, waitTimeoutMs: 1000 });
    await node.start();
    t.teardown(() => node.stop());
    // Every connection cut, then the server stopped: nothing can answer a query.
    await writer.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").catch(() => undefined);
    await pg.halt('immediate');
    try {
      await searchWithoutDatabase(t, node);
    } finally {
      await pg.resume();
    }
  });

  await t.test('a template that does not open fails the start instead of leaving the person out', async (t) => {
    const { rows } = await writer.pool.query<{ sealed_template: Buffer }>("SELECT sealed_template FROM persons WHERE account_id = 'acc2' AND person_id = 'p5'");
    const original = rows[0].sealed_template;
    const damaged = Buffer.from(original);
    damaged[damaged.length - 1] ^= 1;  // the tag
    await writer.pool.query("UPDATE persons SET sealed_template = $1 WHERE account_id = 'acc2' AND person_id = 'p5'", [damaged]);
    try {
      const node = new GalleryFollower(reader, { modelId: MODEL, waitTimeoutMs: 1000 });
      t.teardown(() => node.stop());
      await t.rejects(node.start(), { name: 'SealError', message: /"acc2","p5".*does not open/ });
      t.equal(node.galleries.of('acc2').size, 0, 'nothing was adopted');
    } finally {
      await writer.pool.query("UPDATE persons SET sealed_template = $1 WHERE account_id = 'acc2' AND person_id = 'p5'", [original]);
    }
  });

  async function searchWithoutDatabase(t: Test, node: GalleryFollower): Promise<void> {
    await t.rejects(reader.persons.count(), 'the database is unreachable');
    let checked = 0;
    for (const [key, template] of [...templates].slice(0, 200)) {
      const [accountId, personId] = key.split('/');
      const probe = template.map((x, i) => x + (i % 3 === 0 ? 0.02 : -0.01));
      const [best] = await node.galleries.of(accountId).search(probe, 1, 0.3);
      if (best?.personId !== personId) continue;
      if (Math.abs(best.cosine - cosine(probe, template)) <= 1e-6) checked++;
      else t.fail(`${key}: score ${best.cosine}, exact ${cosine(probe, template)}`);
    }
    t.equal(checked, 200, 'each probe finds its person with the exact cosine, without the database');
  }
}
