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
