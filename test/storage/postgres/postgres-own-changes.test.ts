// A node's writer hands its follower the changes its section committed (OwnChanges), and the follower takes
// them without reading the log only when it stands exactly at the log's last seq before them:
// - what a section reports is what the follower's own read of the log returns for those seqs, field for field;
// - the follower delivers an offer only at that position, and ignores one that is stale or not yet due, or
//   comes where its galleries may hold more than its position says (after a read cut at its batch size);
// - two nodes writing the same few persons at once (creates, updates, removals) end with galleries equal to
//   the database, and some of each node's writes were taken from their writer.
import path from 'node:path';
import t from 'tap';
import { defaultConfig } from '../../../src/config/load';
import { buildApp } from '../../../src/http/app';
import { GalleryFollower } from '../../../src/matching/gallery-follower';
import { readForFollower } from '../../../src/storage/postgres/change-log';
import { type FollowedChange, type OwnChanges, type WrittenFence } from '../../../src/storage/interfaces';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { BOOTSTRAP_KEY, tempDir } from '../../helpers/app';
import { testErrorCatalog } from '../../helpers/errors';
import { DIM, FAKE_MODEL_ID, FakeEngine, fakePhotoB64 } from '../../helpers/fake-engine';
import { postgresCluster, postgresSkipReason } from '../../helpers/postgres';
import { cosine, normalised } from '../../helpers/vectors';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

function template(i: number): Float32Array {
  return normalised(Float32Array.from({ length: DIM }, (_, k) => Math.cos(i * 7 + k)));
}

const input = (i: number) => ({ modelId: FAKE_MODEL_ID, template: template(i), referenceImage: Buffer.from([i & 255]) });

/** The fields a gallery and the meter caches use, comparable with t.same. */
function comparable(c: FollowedChange) {
  return {
    seq: c.seq, accountId: c.accountId, personId: c.personId, op: c.op, modelId: c.modelId, at: c.at,
    current: c.current && { modelId: c.current.modelId, sealedTemplate: c.current.sealedTemplate.toString('base64'),
      created: c.current.created.toISOString(), updated: c.current.updated.toISOString() },
  };
}

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('own_changes');
  const keyFile = path.join(dir, 'own.key');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 4, connectTimeoutMs: 1_000 }), { keyFile });
  const a = await open();
  const b = await open();
  t.teardown(async () => { await a.close(); await b.close(); });

  /** One section on `store` running `write`; its `written`, once committed. */
  const section = async (store: PostgresStore, accountId: string, write: (persons: Parameters<Parameters<PostgresStore['exclusive']>[1]>[0]['persons']) => Promise<unknown>) => {
    let written: WrittenFence | undefined;
    await store.exclusive(accountId, async (scope) => {
      written = scope.written;
      await write(scope.persons);
    });
    return written!;
  };

  await t.test('a section\'s own changes follow the log\'s last seq before them, whichever node wrote it', async (t) => {
    await b.persons.create('other', 'before', input(1), new Date().toISOString());
    const last = await a.changes.lastChange();
    const created = await section(a, 'acme', (p) => p.create('acme', 'p1', input(2), '2026-01-02T03:04:05.678Z'));
    t.equal(created.own?.after, last, 'after: the log\'s last seq before the section\'s change (written by the other node)');
    t.same(created.own?.changes.map((c) => [c.seq, c.op, c.personId]), [[created.seq, 'create', 'p1']]);
    const removed = await section(a, 'acme', (p) => p.remove('acme', 'p1'));
    t.equal(removed.own?.after, created.seq);
    t.equal(removed.own?.changes[0].current, null, 'a removal leaves nothing');
  });

  await t.test('each write, compared with the log read right after it, field for field', async (t) => {
    const c = await b.pool.pool.connect();
    t.teardown(() => c.release());
    const check = async (what: string, written: WrittenFence) => {
      const read = await readForFollower(c, written.own!.after, 10, true);
      t.same(read.changes.map(comparable), written.own!.changes.map(comparable), `${what}: the offered changes are the log's next`);
    };
    await check('create', await section(a, 'acme', (p) => p.create('acme', 'p2', input(5), '2026-03-04T05:06:07.891Z')));
    await check('replace', await section(a, 'acme', (p) => p.replace('acme', 'p2', input(6), '2026-03-05T05:06:07.891Z')));
    await check('template', await section(a, 'acme', (p) => p.setTemplate('acme', 'p2', FAKE_MODEL_ID, template(7))));
    await check('remove', await section(a, 'acme', (p) => p.remove('acme', 'p2')));
    const twice = await section(a, 'acme', async (p) => {
      await p.create('acme', 'p3', input(8), new Date().toISOString());
      await p.replace('acme', 'p3', input(9), new Date().toISOString());
    });
    t.ok(twice.seq > 0, 'a section that changed one person twice committed');
    t.equal(twice.own, undefined, 'and offers nothing: only the table knows the last state');
    const none = await section(a, 'acme', async () => undefined);
    t.same([none.seq, none.own], [0, undefined], 'a section that wrote nothing offers nothing');
  });

  await t.test('a follower delivers an offer only when it stands exactly before it', async (t) => {
    const received: Array<readonly FollowedChange[]> = [];
    const follower = b.followChanges({ after: await b.changes.lastChange(), onChanges: async (batch) => { received.push(batch); },
      onResync: () => b.changes.lastChange(), pollIntervalMs: 600_000 });
    t.teardown(() => follower.stop());
    await follower.start();
    const at = follower.position;
    // Seqs far past the log (no writer will reach them while this follower runs): only an offer delivers them.
    const fake = (seq: number): FollowedChange => ({ seq, accountId: 'x', personId: `f${seq}`, op: 'remove', modelId: FAKE_MODEL_ID,
      at: new Date().toISOString(), current: null });
    const offer = (own: OwnChanges) => { follower.offer(own); return follower.waitFor(own.changes[0].seq, 200).then(() => true, () => false); };
    t.equal(await offer({ after: at + 1, changes: [fake(at + 1_000_001)] }), false, 'not yet due: dropped');
    t.equal(await offer({ after: at - 1, changes: [fake(at + 1_000_002)] }), false, 'stale: dropped');
    t.same([follower.stats.offered, follower.position], [0, at]);
    t.equal(await offer({ after: at, changes: [fake(at + 1_000_003), fake(at + 1_000_004)] }), true, 'exactly next: delivered');
    t.same([follower.stats.offered, follower.position], [2, at + 1_000_004]);
    t.same(received.at(-1)!.map((c) => c.seq), [at + 1_000_003, at + 1_000_004], 'as one batch, as offered');
    follower.offer({ after: at + 1_000_004, changes: [fake(at + 1_000_003)] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(follower.stats.offered, 2, 'changes already delivered: ignored');
  });

  await t.test('an offer is not taken where the galleries may hold more than the position says', async (t) => {
    // A read cut at batchSize hands its persons as they were when read, maybe past its last seq: an offer
    // right after it could put back an older state. The offer made during the first, cut batch is dropped.
    const last = await b.changes.lastChange();
    t.ok(last >= 3);
    const seqs: number[] = [];
    const fake: FollowedChange = { seq: last + 2_000_000, accountId: 'x', personId: 'cut', op: 'remove', modelId: FAKE_MODEL_ID,
      at: new Date().toISOString(), current: null };
    const follower = b.followChanges({
      after: last - 3, batchSize: 2, pollIntervalMs: 600_000, onResync: () => b.changes.lastChange(),
      onChanges: async (batch) => {
        if (seqs.length === 0) follower.offer({ after: batch[batch.length - 1].seq, changes: [fake] });
        seqs.push(...batch.map((c) => c.seq));
      },
    });
    t.teardown(() => follower.stop());
    await follower.start();
    t.equal(follower.stats.offered, 0, 'dropped after a cut read');
    t.notOk(seqs.includes(fake.seq));
    t.equal(follower.position, last, 'the log\'s changes delivered by reading');
    t.equal(await (follower.offer({ after: last, changes: [fake] }), follower.waitFor(fake.seq, 500).then(() => true, () => false)), true,
      'taken once a read saw the end of the log');
  });

  await t.test('two nodes writing the same persons at once end with galleries equal to the database', async (t) => {
    const config = defaultConfig(tempDir());
    config.auth.bootstrap_key = BOOTSTRAP_KEY;
    const engine = new FakeEngine();
    const nodes = await Promise.all([a, b].map(async (store) => {
      const follower = new GalleryFollower(store, { modelId: engine.modelId, waitTimeoutMs: 5_000 });
      await follower.start();
      const app = await buildApp({ config, engine, store, errors: testErrorCatalog(), galleries: follower.galleries, galleryFeed: follower });
      return { store, follower, app };
    }));
    t.teardown(async () => {
      for (const n of nodes) {
        await n.app.close();
        await n.follower.stop();
      }
    });
    const ids = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    let identity = 5_000;
    const statuses = new Map<string, number>();
    let seed = 12_345;
    const draw = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return Math.floor((seed / 2_147_483_648) * n);
    };
    const step = async (node: (typeof nodes)[number]) => {
      const id = ids[draw(ids.length)];
      const method = (['POST', 'POST', 'PUT', 'DELETE'] as const)[draw(4)];
      const res = await node.app.inject({
        method, url: `/person/face/${id}`, headers: { 'api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
        ...(method === 'DELETE' ? {} : { payload: { faceImage: await fakePhotoB64({ identity: identity++ }) } }),
      });
      const key = `${method} ${res.statusCode} ${res.statusCode === 200 ? '' : res.json().code}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    };
    await Promise.all(nodes.map(async (node, k) => {
      await Promise.all([0, 1, 2].map(async (w) => {
        for (let n = 0; n < 40; n++) await step(node);
      }));
    }));
    t.ok([...statuses].filter(([k]) => k.includes(' 200')).reduce((n, [, v]) => n + v, 0) >= 40, `writes that changed something: ${JSON.stringify([...statuses])}`);
    const lastSeq = await a.changes.lastChange();
    for (const node of nodes) await node.follower.reach(lastSeq);
    const accountId = (await a.pool.query<{ account_id: string }>('SELECT account_id FROM person_changes WHERE person_id = $1 LIMIT 1', [ids[3]])).rows[0].account_id;
    for (const [k, node] of nodes.entries()) {
      const gallery = node.follower.galleries.of(accountId);
      for (const id of ids) {
        const stored = await a.persons.get(accountId, id);
        const held = await gallery.get(id);
        // The index keeps the template as it normalised it: the same face to float rounding, not bit for bit.
        t.equal(held !== undefined, stored !== undefined, `node ${k}: ${id} ${stored ? 'present' : 'absent'} as in the database`);
        if (held && stored) t.ok(cosine(held, stored.template) > 1 - 1e-6, `node ${k}: ${id} holds the database's template`);
      }
      t.ok(node.follower.status()!.stats.offered > 0, `node ${k}: ${node.follower.status()!.stats.offered} changes taken from their writer`);
    }
  });
}
