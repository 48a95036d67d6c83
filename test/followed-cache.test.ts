// The cache a following node meters from (src/storage/postgres/followed-cache.ts): nothing is answered
// while not trusted; a read's fill is dropped when anything was written since the read began, or when the
// connection was lost or made meanwhile; the oldest entry makes room past the bound.
import t from 'tap';
import { FollowedCache } from '../src/storage/postgres/followed-cache';

t.test('not trusted: nothing kept, nothing answered', async (t) => {
  const c = new FollowedCache<string>(10);
  c.fill('a', 'x', c.token());
  c.set('b', 'y');
  t.equal(c.get('a'), undefined);
  t.equal(c.get('b'), undefined);
  t.equal(c.size, 0);
});

t.test('trusted: a fill is kept unless the cache was written or reset since its token', async (t) => {
  const c = new FollowedCache<string>(10);
  c.reset(true);
  let token = c.token();
  c.fill('a', 'read', token);
  t.equal(c.get('a'), 'read');
  token = c.token();
  c.set('other', 'delivered');
  c.fill('b', 'stale', token);
  t.equal(c.get('b'), undefined, 'a delivery came after the read began');
  token = c.token();
  c.delete('a');
  c.fill('a', 'older', token);
  t.equal(c.get('a'), undefined, 'a removal came after the read began');
  token = c.token();
  c.reset(true);
  c.fill('c', 'before the reconnect', token);
  t.equal(c.get('c'), undefined);
  c.set('d', 'kept');
  c.reset(false);
  t.equal(c.get('d'), undefined, 'lost: emptied and not trusted');
  t.equal(c.token(), -1);
});

t.test('past its bound the oldest entry goes; a refreshed one becomes the youngest', async (t) => {
  const c = new FollowedCache<number>(3);
  c.reset(true);
  c.set('a', 1);
  c.set('b', 2);
  c.set('c', 3);
  c.set('a', 10);
  c.set('d', 4);
  t.equal(c.size, 3);
  t.equal(c.get('b'), undefined);
  t.same(['a', 'c', 'd'].map((k) => c.get(k)), [10, 3, 4]);
});

t.test('a bulk fill keeps what it read, except keys written since it began; it stops at a reset or when full', async (t) => {
  const c = new FollowedCache<string>(4);
  c.reset(true);
  c.set('kept', 'delivered before');
  const fill = c.beginFill();
  c.set('a', 'delivered during');
  c.delete('b');
  t.ok(fill.put('a', 'page (older)'), 'a written key is skipped, the fill goes on');
  t.ok(fill.put('b', 'page (older)'));
  t.ok(fill.put('c', 'page'));
  t.ok(fill.put('kept', 'page (newer than the delivery before the fill)'));
  t.same(['a', 'b', 'c', 'kept'].map((k) => c.get(k)), ['delivered during', undefined, 'page', 'page (newer than the delivery before the fill)']);
  t.ok(fill.put('d', 'page'), 'the fourth entry fits');
  t.notOk(fill.put('e', 'page'), 'full: the fill stops');
  t.notOk(fill.stale);
  fill.end();

  c.reset(true);
  const old = c.beginFill();
  c.reset(true);
  t.ok(old.stale, 'a reset makes a running fill stale');
  t.notOk(old.put('x', 'read before the reset'), 'and it keeps nothing more');
  t.equal(c.get('x'), undefined);
  old.end();

  const lost = c.beginFill();
  c.reset(false);
  t.notOk(lost.put('y', 'v'), 'not trusted: nothing kept');
  lost.end();
});

t.test('two fills share the written keys; once both end, writes are no longer remembered', async (t) => {
  const c = new FollowedCache<string>(10);
  c.reset(true);
  const first = c.beginFill();
  const second = c.beginFill();
  c.set('k', 'delivered');
  first.end();
  t.ok(second.put('k', 'page'));
  t.equal(c.get('k'), 'delivered', 'the second fill still skips a key written while it ran');
  second.end();
  const third = c.beginFill();
  t.ok(third.put('k', 'page read after the write'));
  t.equal(c.get('k'), 'page read after the write', 'a fill begun after the write keeps its read');
  third.end();
});
