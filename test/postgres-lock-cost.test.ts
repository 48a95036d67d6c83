// What the per-account advisory lock costs a person create, measured against the real server (the figures go to
// docs/postgres.md): sequential creates with and without the lock, interleaved in rounds so that both see
// the same machine load; then eight concurrent writers into one account and into eight accounts. Asserted
// is behaviour, not speed: every create succeeds, and with the lock no two sections of one account ever run
// at once, even across two nodes (without it they do).
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { postgresSettings } from '../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../src/storage/postgres/store';
import { tempDir } from './helpers/app';
import { postgresSkipReason, startPostgres } from './helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const ROUNDS = 10;
const PER_ROUND = 30;

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
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
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

  await t.test('sequential creates: with and without the account lock', async (t) => {
    for (let i = 0; i < 20; i++) { await plain(a, 'warm'); await locked(a, 'warm'); }
    const without: number[] = [];
    const withLock: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const [list, create] of [[without, plain], [withLock, locked]] as const) {
        for (let i = 0; i < PER_ROUND; i++) {
          const started = process.hrtime.bigint();
          t.equal(await create(a, 'seq'), true) || t.bailout('create failed');
          list.push(Number(process.hrtime.bigint() - started) / 1e6);
        }
      }
    }
    const w = stats(without), l = stats(withLock);
    t.comment(`sequential create, ${without.length} each: without lock mean ${fmt(w.mean)} ms (p50 ${fmt(w.p50)}, p99 ${fmt(w.p99)}); ` +
      `with lock mean ${fmt(l.mean)} ms (p50 ${fmt(l.p50)}, p99 ${fmt(l.p99)}); cost ${fmt(l.mean - w.mean)} ms per create (mean), ` +
      `${fmt(l.p50 - w.p50)} ms (p50)`);
    t.equal(await a.persons.count('seq'), 2 * ROUNDS * PER_ROUND);
  });

  await t.test('eight concurrent writers over two nodes: one account, eight accounts', async (t) => {
    const rate = async (label: string, writer: (w: number) => Promise<boolean>) => {
      const started = Date.now();
      const results = await Promise.all(Array.from({ length: 8 }, async (_, w) => {
        const out: boolean[] = [];
        for (let i = 0; i < 25; i++) out.push(await writer(w));
        return out;
      }));
      const ms = Date.now() - started;
      t.equal(results.flat().filter(Boolean).length, 200, `${label}: all 200 created`);
      return `${label} ${(200 / (ms / 1000)).toFixed(0)}/s`;
    };
    const inside = new Map<string, number>();
    const overlapsLocked = { n: 0 };
    const overlapsUnlocked = { n: 0 };
    const lines = [
      await rate('without lock, one account', (w) => plain(w % 2 ? b : a, 'one')),
      await rate('with lock, one account', (w) => locked(w % 2 ? b : a, 'one-locked', inside, overlapsLocked)),
      await rate('with lock, eight accounts', (w) => locked(w % 2 ? b : a, `acct-${w}`, inside, overlapsLocked)),
      // The same bookkeeping without the lock: sections of one account do overlap.
      await rate('unlocked sections, one account', async (w) => {
        const store = w % 2 ? b : a;
        const already = inside.get('open') ?? 0;
        if (already > 0) overlapsUnlocked.n++;
        inside.set('open', already + 1);
        try {
          return await plain(store, 'open');
        } finally {
          inside.set('open', (inside.get('open') ?? 1) - 1);
        }
      }),
    ];
    t.comment(`creates per second: ${lines.join('; ')}`);
    t.equal(overlapsLocked.n, 0, 'with the lock, no two sections of one account overlapped (two nodes)');
    t.ok(overlapsUnlocked.n > 0, `without it they did (${overlapsUnlocked.n} times)`);
  });
}
