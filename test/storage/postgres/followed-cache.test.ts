// The cache a following node meters from (src/storage/postgres/followed-cache.ts): nothing is answered
// while not trusted; a read's fill is dropped when anything was written since the read began, or when the
// connection was lost or made meanwhile; the oldest entry makes room past the bound.
import t from 'tap';
import { FollowedCache } from '../../../src/storage/postgres/followed-cache';

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

t.test('an owner is given back every value that is not kept, once, whatever happens to it', async (t) => {
  const live = new Set<number>();
  let doubleRelease = 0;
  const owner = {
    release: (v: number) => { if (!live.delete(v)) doubleRelease++; },
    releaseAll: () => live.clear(),
  };
  const c = new FollowedCache<number>(50, owner);
  let next = 0;
  const value = () => { live.add(next); return next++; };
  // A seeded sequence of every operation, trusted and not, with bulk fills running through it.
  let seed = 7;
  const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  let fill = c.beginFill();
  for (let i = 0; i < 20_000; i++) {
    const key = `k${rand(80)}`;
    switch (rand(9)) {
      case 0: c.set(key, value()); break;
      case 1: c.delete(key); break;
      case 2: c.fill(key, value(), rand(4) === 0 ? -5 : c.token()); break;
      case 3: fill.put(key, value()); break;
      // Resets, trusted or not, until the last stretch, which runs trusted (so the cache holds values at the end).
      case 4: if (i < 16_000 && rand(20) === 0) c.reset(rand(3) !== 0); else if (i === 16_000 || !c.isTrusted) c.reset(true); break;
      case 5: if (rand(10) === 0) { fill.end(); fill = c.beginFill(); } break;
      default: c.set(key, value());
    }
  }
  fill.end();
  const kept = new Set<number>();
  for (let k = 0; k < 80; k++) {
    const v = c.get(`k${k}`);
    if (v !== undefined) kept.add(v);
  }
  t.equal(doubleRelease, 0, 'no value released twice');
  t.ok(c.size <= 50, 'the bound holds');
  t.ok(c.isTrusted && c.size > 0, `${c.size} entries at the end`);
  t.same([...live].sort((a, b) => a - b), [...kept].sort((a, b) => a - b), 'what the owner still holds is what the cache keeps');
  t.equal(kept.size, c.size);
});
