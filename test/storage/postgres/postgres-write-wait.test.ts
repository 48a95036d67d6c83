// A person write on a node whose galleries follow the change log answers once its galleries hold that
// write: it waits for the write's own change (the section's `written`), not for the whole log as it
// stood when the write committed (other accounts' and later writes, which cost a read and more waiting).
// Read-your-writes still holds: the next identify on the node finds the person.
import path from 'node:path';
import t from 'tap';
import { defaultConfig } from '../../../src/config/load';
import { buildApp } from '../../../src/http/app';
import { GalleryFollower } from '../../../src/matching/gallery-follower';
import { changesAfter } from '../../../src/storage/postgres/change-log';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { BOOTSTRAP_KEY, tempDir } from '../../helpers/app';
import { testErrorCatalog } from '../../helpers/errors';
import { DIM, FakeEngine, fakePhotoB64 } from '../../helpers/fake-engine';
import { postgresCluster, postgresSkipReason } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

async function run(): Promise<void> {
  const { pg } = await postgresCluster(t);
  const url = await pg.createDatabase('write_wait');
  const dir = tempDir();
  const config = defaultConfig(dir);
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  const engine = new FakeEngine();
  const store = await openPostgresStore(postgresSettings(url, { poolSize: 4 }), { keyFile: path.join(dir, 'node.key') });
  const follower = new GalleryFollower(store, { modelId: engine.modelId, waitTimeoutMs: 5_000 });
  await follower.start();
  const calls: string[] = [];
  const feed = {
    reach: (seq: number) => { calls.push(`reach ${seq}`); return follower.reach(seq); },
    catchUp: () => { calls.push('catchUp'); return follower.catchUp(); },
  };
  const app = await buildApp({ config, engine, store, errors: testErrorCatalog(), galleries: follower.galleries, galleryFeed: feed });
  t.teardown(async () => {
    await app.close();
    await follower.stop();
    await store.close();
  });
  const call = async (method: 'POST' | 'PUT' | 'DELETE', url: string, identity?: number) => app.inject({
    method, url, headers: { 'api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    ...(identity === undefined ? {} : { payload: { faceImage: await fakePhotoB64({ identity }) } }),
  });
  const ownChange = async (personId: string) =>
    (await changesAfter(store.pool, 0, 100_000)).filter((c) => c.personId === personId).map((c) => c.seq).pop();

  await t.test('a create, an update and a removal each wait for their own change, then identify finds them as written', async (t) => {
    // Another account's person, written before: the log does not end at this account's changes.
    await store.persons.create('other', 'x', { modelId: engine.modelId, template: new Float32Array(DIM).fill(0.1), referenceImage: Buffer.from('x') }, new Date().toISOString());
    await follower.catchUp();
    calls.length = 0;
    t.equal((await call('POST', '/person/face/p1', 101)).statusCode, 200);
    t.same(calls, ['reach 0', `reach ${await ownChange('p1')}`], 'the fence (no change of this account yet), then its own change');
    const found = await call('POST', '/person/recognize-face', 101);
    t.equal(found.json().personId, 'p1', 'read-your-writes: found at once');

    calls.length = 0;
    t.equal((await call('PUT', '/person/face/p1', 102)).statusCode, 200);
    t.equal(calls.length, 2);
    t.equal(calls[1], `reach ${await ownChange('p1')}`, 'the update waits for its own change');
    t.equal((await call('POST', '/person/recognize-face', 102)).json().personId, 'p1', 'the new face is found at once');

    calls.length = 0;
    t.equal((await call('DELETE', '/person/face/p1')).statusCode, 200);
    t.same(calls.slice(1), [`reach ${await ownChange('p1')}`], 'the removal waits for its own change');
    t.notOk(calls.includes('catchUp'));
    t.not((await call('POST', '/person/recognize-face', 102)).json().personId, 'p1', 'and is gone from identify at once');
  });
}
