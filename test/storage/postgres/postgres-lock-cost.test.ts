// What the per-account advisory lock costs a person create, measured against the real server (the figures go to
// docs/postgres.md): sequential creates with and without the lock in interleaved pairs (the median of the
// pairs' differences is the cost), then eight concurrent writers over two nodes into one account and into
// eight accounts, each scenario repeated in rotating order. Asserted is behaviour, not speed: every create
// succeeds, and with the lock no two sections of one account ever run at once, even across two nodes
// (without it they do).
import path from 'node:path';
import t from 'tap';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const PAIRS = 400;
/** Each concurrent scenario runs this often, the scenarios in rotating order; the median rate is reported. */
const REPEATS = 3;

function input(i: number) {
  // A 512-value template and a 20 KB image: about what an enrolment writes.
  return { modelId: 'm1', template: Float32Array.from({ length: 512 }, (_, k) => Math.sin(i * 7 + k)), referenceImage: Buffer.alloc(20_000, i & 255) };
}

const stats = (ms: number[]) => {
  const s = [...ms].sort((x, y) => x - y);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return { mean: s.reduce((x, y) => x + y, 0) / s.length, p50: at(0.5), p99: at(0.99) };
};
const fmt = (x: number) => x.toFixed(2);

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('cost');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 10 }), { keyFile: path.join(dir, 'k') });
  const [a, b] = await Promise.all([open(), open()]);
  t.teardown(async () => { await a.close(); await b.close(); });
  let n = 0;
  const now = () => new Date().toISOString();

  const plain = async (store: PostgresStore, account: string) => {
    const i = n++;
    return (await store.persons.create(account, `p${i}`, input(i), now())).created;
  };
  const locked = async (store: PostgresStore, account: string, inside?: Map<string, number>, overlaps?: { n: number }) => {
    const i = n++;
    return store.exclusive(account, async (scope) => {
      const already = inside?.get(account) ?? 0;
      if (already > 0 && overlaps) overlaps.n++;
      inside?.set(account, already + 1);
      try {
        return (await scope.persons.create(account, `p${i}`, input(i), now())).created;
      } finally {
        inside?.set(account, (inside.get(account) ?? 1) - 1);
      }
    });
  };

  await t.test('sequential creates: with and without the account lock, in interleaved pairs', async (t) => {
    for (let i = 0; i < 20; i++) { await plain(a, 'warm'); await locked(a, 'warm'); }
    const timed = async (create: typeof plain) => {
      const started = process.hrtime.bigint();
      if (!(await create(a, 'seq'))) throw new Error('create failed');
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    // Pairs, the order alternating, so that load drifting on a shared machine hits both alike; the cost is
    // the median of the pairs' differences.
    const without: number[] = [];
    const withLock: number[] = [];
    const differences: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      const first = i % 2 ? await timed(locked) : await timed(plain);
      const second = i % 2 ? await timed(plain) : await timed(locked);
      const [w, l] = i % 2 ? [second, first] : [first, second];
      without.push(w);
      withLock.push(l);
      differences.push(l - w);
    }
    const w = stats(without), l = stats(withLock), d = stats(differences);
    t.comment(`sequential create, ${PAIRS} pairs: without lock p50 ${fmt(w.p50)} ms (mean ${fmt(w.mean)}); with lock p50 ${fmt(l.p50)} ms ` +
      `(mean ${fmt(l.mean)}); cost per create: median of pair differences ${fmt(d.p50)} ms`);
    t.equal(await a.persons.count('seq'), 2 * PAIRS, 'every create succeeded');
  });

  await t.test('eight concurrent writers over two nodes: one account, eight accounts', async (t) => {
    const inside = new Map<string, number>();
    const overlapsLocked = { n: 0 };
    const overlapsUnlocked = { n: 0 };
    let round = 0;
    const scenarios: Array<[string, (w: number) => Promise<boolean>]> = [
      ['without lock, one account', (w) => plain(w % 2 ? b : a, `one-${round}`)],
      ['with lock, one account', (w) => locked(w % 2 ? b : a, `one-locked-${round}`, inside, overlapsLocked)],
      ['with lock, eight accounts', (w) => locked(w % 2 ? b : a, `acct-${round}-${w}`, inside, overlapsLocked)],
      ['without lock, eight accounts', (w) => plain(w % 2 ? b : a, `acct-open-${round}-${w}`)],
    ];
    const rates = new Map<string, number[]>(scenarios.map(([label]) => [label, []]));
    for (round = 0; round < REPEATS; round++) {
      for (let k = 0; k < scenarios.length; k++) {
        const [label, writer] = scenarios[(k + round) % scenarios.length];
        const started = Date.now();
        const results = await Promise.all(Array.from({ length: 8 }, async (_, w) => {
          const out: boolean[] = [];
          for (let i = 0; i < 25; i++) out.push(await writer(w));
          return out;
        }));
        rates.get(label)!.push(200 / ((Date.now() - started) / 1000));
        t.equal(results.flat().filter(Boolean).length, 200, `${label}, round ${round}: all 200 created`);
      }
    }
    t.comment(`creates per second, 8 writers over two nodes, median of ${REPEATS}: ` +
      [...rates].map(([label, r]) => `${label} ${stats(r).p50.toFixed(0)}/s`).join('; '));
    // The same bookkeeping without the lock: sections of one account do overlap.
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 10; i++) {
        const already = inside.get('open') ?? 0;
        if (already > 0) overlapsUnlocked.n++;
        inside.set('open', already + 1);
        try {
          await plain(w % 2 ? b : a, 'open');
        } finally {
          inside.set('open', (inside.get('open') ?? 1) - 1);
        }
      }
    }));
    t.equal(overlapsLocked.n, 0, 'with the lock, no two sections of one account overlapped (two nodes)');
    t.ok(overlapsUnlocked.n > 0, `without it they did (${overlapsUnlocked.n} times)`);
  });
}
