// A following node's cache of persons' meta is filled from the table each time its follower listens
// (src/storage/postgres/meter-caches.ts), over a source that hands out pages when the test lets it: a person
// changed or removed by a delivered change while the fill reads is answered as delivered, never as the older
// page says; a reconnection during a fill stops it and starts another; a resync fills again; the fill stops at
// the cache's bound; a failed page stops the fill, and requests then read as before.
import t from 'tap';
import type { FollowedChange } from '../../../src/storage/interfaces';
import { MeterCaches, type PersonMetaSource } from '../../../src/storage/postgres/meter-caches';
import type { PersonMetaPosition, PersonMetaRow } from '../../../src/storage/postgres/persons';

const MODEL = 'model-a';
const T0 = new Date('2026-11-01T00:00:00Z');
const T1 = new Date('2026-11-02T00:00:00Z');

function rows(n: number): PersonMetaRow[] {
  return Array.from({ length: n }, (_, i) => ({ model_id: MODEL, account_id: 'acct', person_id: `p${String(i).padStart(6, '0')}`, created_ms: T0.getTime(), updated_ms: T0.getTime() }));
}

/** A table of `all` rows handed out a page at a time, each page only once the test calls `next()`. */
class GatedSource implements PersonMetaSource {
  reads = 0;
  failAt = -1;
  private gates: Array<() => void> = [];
  constructor(private readonly all: PersonMetaRow[]) {}

  async metaPage(after: PersonMetaPosition | undefined, limit: number): Promise<PersonMetaRow[]> {
    const read = this.reads++;
    const from = after ? this.all.findIndex((r) => r.person_id === after.person_id) + 1 : 0;
    const page = this.all.slice(from, from + limit).map((r) => ({ ...r }));  // what the table holds when read
    await new Promise<void>((resolve) => this.gates.push(resolve));
    if (read === this.failAt) throw new Error('connection lost');
    return page;
  }

  /** Lets the oldest waiting page through (waits until one is asked for). */
  async next(): Promise<void> {
    while (this.gates.length === 0) await new Promise((r) => setImmediate(r));
    this.gates.shift()!();
    await new Promise((r) => setImmediate(r));
  }
}

function change(personId: string, current: { updated: Date } | null): FollowedChange {
  return {
    seq: 1, accountId: 'acct', personId, op: current ? 'replace' : 'remove', modelId: MODEL, at: T1.toISOString(),
    current: current && { modelId: MODEL, sealedTemplate: Buffer.alloc(0), created: T0, updated: current.updated },
  };
}

t.test('a fill after listening answers every person; changes delivered meanwhile win over its pages', async (t) => {
  const table = rows(4500);  // three pages of 2,000
  const source = new GatedSource(table);
  const caches = new MeterCaches({ source, fillDelayMs: 0, fillPageRows: 2000 });
  caches.listening(true);
  while (source.reads === 0) await new Promise((r) => setImmediate(r));
  t.equal(caches.person('acct', 'p000001'), undefined, 'nothing known before the first page');
  // Delivered once the fill began, before the pages that hold them are read: p002500 replaced, p003000 removed.
  caches.delivered([change('p002500', { updated: T1 }), change('p003000', null)]);
  table[2500] = { ...table[2500], updated_ms: Date.parse('2026-10-01T00:00:00Z') };  // the page would say otherwise
  await source.next();
  t.equal(caches.person('acct', 'p001999')?.created, T0.toISOString(), 'the first page is answered at once');
  // Delivered while the second page is being read: p001000 (already filled) and p002001 (in the page).
  const second = source.next();
  caches.delivered([change('p002001', null), change('p001000', { updated: T1 })]);
  await second;
  await source.next();
  await caches.filled();
  t.same(caches.fillStats, { completed: 1, stopped: 0, lastKept: 4500 - 3 });
  t.equal(caches.person('acct', 'p004499')?.updated, T0.toISOString(), 'the last page too');
  t.equal(caches.person('acct', 'p002500')?.updated, T1.toISOString(), 'a replacement delivered during the fill is kept');
  t.equal(caches.person('acct', 'p001000')?.updated, T1.toISOString());
  t.equal(caches.person('acct', 'p003000'), undefined, 'a removal delivered during the fill is not undone by the page');
  t.equal(caches.person('acct', 'p002001'), undefined);
});

t.test('a connection lost during a fill stops it; listening again fills anew', async (t) => {
  const source = new GatedSource(rows(4500));
  const caches = new MeterCaches({ source, fillDelayMs: 0, fillPageRows: 2000 });
  caches.listening(true);
  await source.next();
  caches.listening(false);
  t.equal(caches.person('acct', 'p000001'), undefined, 'not listening: nothing answered');
  await source.next();  // the old fill's second page arrives after the loss
  await caches.filled();
  t.same(caches.fillStats, { completed: 0, stopped: 1, lastKept: 2000 });
  caches.listening(true);
  t.equal(caches.person('acct', 'p002100'), undefined, 'the old page was not kept');
  for (let i = 0; i < 3; i++) await source.next();
  await caches.filled();
  t.equal(caches.fillStats.completed, 1);
  t.equal(caches.person('acct', 'p002100')?.created, T0.toISOString());
  caches.resynced(true);
  t.equal(caches.person('acct', 'p002100'), undefined, 'a resync empties the persons');
  for (let i = 0; i < 3; i++) await source.next();
  await caches.filled();
  t.equal(caches.fillStats.completed, 2, 'and fills them again');
  t.equal(caches.person('acct', 'p002100')?.created, T0.toISOString());
});

t.test('a reconnection while a fill reads: the new fill runs, the old one keeps nothing more', async (t) => {
  const source = new GatedSource(rows(2500));
  const caches = new MeterCaches({ source, fillDelayMs: 0, fillPageRows: 2000 });
  caches.listening(true);
  while (source.reads === 0) await new Promise((r) => setImmediate(r));
  caches.listening(false);
  caches.listening(true);
  await source.next();  // the first fill's first page: read before the reconnection, dropped
  t.equal(caches.person('acct', 'p000001'), undefined);
  await source.next();  // the second fill's first page
  t.equal(caches.person('acct', 'p000001')?.created, T0.toISOString());
  await source.next();
  await caches.filled();
  t.same(caches.fillStats, { completed: 1, stopped: 1, lastKept: 2500 });
});

t.test('the fill stops at the bound; a failed page stops it and requests read as before', async (t) => {
  const source = new GatedSource(rows(4500));
  const caches = new MeterCaches({ source, maxPersons: 3000, fillDelayMs: 0, fillPageRows: 2000 });
  caches.listening(true);
  await source.next();
  await source.next();
  await caches.filled();
  t.same(caches.fillStats, { completed: 1, stopped: 0, lastKept: 3000 });
  t.equal(source.reads, 2, 'no page read past the bound');
  t.equal(caches.person('acct', 'p003000'), undefined);

  const failing = new GatedSource(rows(4500));
  failing.failAt = 1;
  const other = new MeterCaches({ source: failing, fillDelayMs: 0, fillPageRows: 2000 });
  other.listening(true);
  await failing.next();
  await failing.next();
  await other.filled();
  t.same(other.fillStats, { completed: 0, stopped: 1, lastKept: 2000 });
  t.equal(other.person('acct', 'p000001')?.created, T0.toISOString(), 'what was kept stays true');
  t.equal(other.person('acct', 'p002001'), undefined, 'the rest is read by its requests');
});

t.test('a fill waits for its delay, and a reset meanwhile cancels it', async (t) => {
  const source = new GatedSource(rows(10));
  const caches = new MeterCaches({ source, fillDelayMs: 50 });
  const keepAlive = setInterval(() => undefined, 1000);  // the delay's timer does not hold the process
  t.teardown(() => clearInterval(keepAlive));
  caches.listening(true);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(source.reads, 0, 'nothing read during the delay');
  caches.listening(false);
  await caches.filled();
  t.equal(source.reads, 0, 'lost before the delay ended: no fill');
  caches.listening(true);
  await source.next();
  await caches.filled();
  t.same(caches.fillStats, { completed: 1, stopped: 0, lastKept: 10 });
});

t.test('without a source nothing is filled', async (t) => {
  const caches = new MeterCaches();
  caches.listening(true);
  await caches.filled();
  t.same(caches.fillStats, { completed: 0, stopped: 0, lastKept: 0 });
});
