// The typed-array slots a node's meter cache keeps persons' metadata in (src/storage/postgres/meta-slots.ts):
// what a slot is given is read back exactly (milliseconds, the model id), freed slots are reused before the
// arrays grow, growing keeps every slot, and emptying frees them all.
import t from 'tap';
import { MetaSlots } from '../../../src/storage/postgres/meta-slots';

t.test('slots hold what they are given, through growth, reuse and emptying', async (t) => {
  const s = new MetaSlots();
  const at = Date.parse('2026-11-28T01:02:03.456Z');
  const slots = Array.from({ length: 5000 }, (_, i) => s.take(i % 3 === 0 ? 'model-a' : 'model-b', at + i, at + 2 * i));
  t.equal(s.size, 5000);
  t.same(s.read(slots[4999]), { created: at + 4999, updated: at + 9998, modelId: 'model-b' }, 'kept across the arrays\' growth');
  t.same(s.read(slots[3]), { created: at + 3, updated: at + 6, modelId: 'model-a' });
  s.release(slots[10]);
  s.release(slots[20]);
  t.equal(s.size, 4998);
  const reused = [s.take('model-c', 1, 2), s.take('model-c', 3, 4)];
  t.same(reused.sort((a, b) => a - b), [slots[10], slots[20]].sort((a, b) => a - b), 'freed slots are taken again first');
  t.equal(s.read(reused[0]).modelId, 'model-c');
  s.releaseAll();
  t.equal(s.size, 0);
  t.equal(s.take('model-a', 5, 6), 0, 'after emptying, slots start over');
  t.same(s.read(0), { created: 5, updated: 6, modelId: 'model-a' });
});
