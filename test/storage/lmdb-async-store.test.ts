// The LMDB store behind the asynchronous storage interface: what it answers equals the LMDB store's own
// answers; the replay cache refuses a signature until it expires; the throttle counts and refuses as the
// in-process throttle does; the exclusive section runs one at a time per account with the last change as
// its fence; writes through the scope survive a reopen.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { templateModelId, templateSize } from '../../src/engine/template-spec';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';
import { openStore } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';

const MODEL = templateModelId();

function randomTemplate(): Float32Array {
  const v = Float32Array.from({ length: templateSize() }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

t.test('persons, fence and scope over LMDB, durable through a reopen', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  let store = lmdbAsyncStore(await openStore(db));
  t.equal(lmdbAsyncStore(store.lmdb), store, 'one view per store');
  const template = randomTemplate();
  const now = new Date().toISOString();
  const fences: number[] = [];
  const order: string[] = [];
  await Promise.all(['a', 'b'].map((id) => store.exclusive('acc', async ({ persons, fence }) => {
    fences.push(fence.seq);
    order.push(`in ${id}`);
    await new Promise((r) => setTimeout(r, 20));
    const result = await persons.create('acc', id, { modelId: MODEL, template, referenceImage: Buffer.from('img') }, now);
    order.push(`out ${id}`);
    t.ok(result.created, `${id} created through the scope`);
  })));
  t.same(order, ['in a', 'out a', 'in b', 'out b'], 'sections of one account do not overlap');
  t.same(fences, [0, 1], 'the fence is the last change before the section');
  t.equal(await store.changes.lastChange(), 2);
  t.equal(await store.persons.count('acc'), 2);
  const blocks = [];
  for await (const b of store.persons.templateBlocks(MODEL)) blocks.push(b);
  t.same(blocks.flatMap((b) => b.ids).sort(), ['a', 'b'], 'template blocks hold both');
  await store.close();

  store = lmdbAsyncStore(await openStore(db));
  t.teardown(() => store.close());
  t.equal((await store.persons.meta('acc', 'a'))?.modelId, MODEL, 'reopened: the person is there');
  const [back] = await store.persons.templatesOf('acc', ['b']);
  t.same(Array.from(back!), Array.from(template), 'template read back');
  t.same((await store.persons.referenceImage('acc', 'a'))?.toString(), 'img');
  const all = [];
  for await (const p of store.persons.all()) all.push(p.personId);
  t.same(all.sort(), ['a', 'b']);
  const many = await store.persons.createMany('acc', [{ personId: 'a', modelId: MODEL, template, referenceImage: Buffer.from('a') }, { personId: 'c', modelId: MODEL, template, referenceImage: Buffer.from('c') }], now);
  t.same(many, { created: 1, skipped: ['a'] });
});

t.test('replay cache, throttle and settings in this process', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = lmdbAsyncStore(await openStore(path.join(dir, 'db')));
  t.teardown(() => store.close());
  const now = new Date(1_000_000);
  const until = new Date(2_000_000);
  t.equal(await store.replayCache.claim('sig', now, until), true, 'first claim');
  t.equal(await store.replayCache.claim('sig', new Date(1_999_999), until), false, 'replay refused');
  t.equal(await store.replayCache.claim('sig', until, new Date(3_000_000)), true, 'expired: claimable again');

  let clock = 0;
  const throttle = store.signInThrottle({ maxFailures: 2, windowMs: 10_000, now: () => clock });
  const first = await throttle.tryBegin(['k']);
  const second = await throttle.tryBegin(['k']);
  t.ok('attempt' in first && 'attempt' in second, 'two attempts begin');
  t.same(await throttle.tryBegin(['k']), { retryAfterSeconds: 10 }, 'the third waits the window');
  clock = 5_000;
  if ('attempt' in second) await throttle.succeeded(second.attempt, 'other');
  t.ok('attempt' in await throttle.tryBegin(['k']), 'a success takes its failure back');
  t.equal(await throttle.retryAfterSeconds(['k']), 5, 'at the limit again: until the oldest leaves');

  const secret = await store.settings.secret('csrf', 32);
  t.equal(secret.length, 32);
  t.same(await store.settings.secret('csrf', 32), secret, 'one secret per name');
  await store.settings.set('x', 'y');
  t.equal(await store.settings.get('x'), 'y');
});

t.test('accepted signatures are in the store: a reopen inside the window still refuses them', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const now = new Date(1_000_000);
  const until = new Date(2_000_000);
  const first = lmdbAsyncStore(await openStore(path.join(dir, 'db')));
  t.equal(await first.replayCache.claim('kept', now, until), true);
  t.equal(await first.replayCache.claim('short', now, new Date(1_500_000)), true);
  await first.close();
  const again = lmdbAsyncStore(await openStore(path.join(dir, 'db')));
  t.teardown(() => again.close());
  t.equal(await again.replayCache.prune(new Date(1_600_000)), 1, 'the expired one is pruned');
  t.equal(await again.replayCache.claim('kept', new Date(1_600_000), until), false, 'refused after the reopen');
  t.equal(await again.replayCache.claim('short', new Date(1_600_000), until), true, 'an expired one is claimable');
});
