// npm run bench:scale — what a second cloud node over one PostgreSQL database costs and gains, without the
// face engine (the storage and gallery side only): bulk enrolment into the shared table, a node's start-up
// rebuild of its galleries from it (time, memory), a gallery search whose exact re-rank reads the candidates'
// templates from the database beside the same search over LMDB's rows, and how long after a write on node A
// node B's galleries hold it (four concurrent writers).
// Needs an empty database: BENCH_SCALE_POSTGRES_URL=postgres://user@host:port/db (e.g. the one test/helpers/
// postgres.ts makes). BENCH_SCALE_PERSONS (default 20000) and BENCH_SCALE_ACCOUNTS (4) size the gallery.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { templateModelId, templateSize } from '../src/engine/template-spec';
import { Galleries } from '../src/matching/galleries';
import { GalleryFollower } from '../src/matching/gallery-follower';
import { postgresSettings } from '../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../src/storage/postgres/store';
import { openStore } from '../src/storage/store';
import { mapLimit, percentile, printJsonLine } from './common';

const URL_ = process.env.BENCH_SCALE_POSTGRES_URL;
const PERSONS = Number(process.env.BENCH_SCALE_PERSONS ?? 20000);
const ACCOUNTS = Number(process.env.BENCH_SCALE_ACCOUNTS ?? 4);
const SEARCHES = 300;
const CHUNK = 500;
const MODEL = templateModelId();

function randomTemplate(): Float32Array {
  const v = Float32Array.from({ length: templateSize() }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

const ms = (since: number) => +(performance.now() - since).toFixed(1);
const stats = (v: number[]) => ({ p50: +percentile(v, 50).toFixed(2), p99: +percentile(v, 99).toFixed(2), max: +Math.max(...v).toFixed(2) });
const accountOf = (i: number) => `acc${i % ACCOUNTS}`;

async function searchTimes(galleries: Galleries, probes: Float32Array[]): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < probes.length; i++) {
    const started = performance.now();
    await galleries.of(accountOf(i)).search(probes[i], 1, 0.5);
    times.push(performance.now() - started);
  }
  return times;
}

async function main(): Promise<void> {
  if (!URL_) throw new Error('bench:scale needs BENCH_SCALE_POSTGRES_URL (an empty database)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'));
  const keyFile = path.join(dir, 'cluster.key');
  fs.writeFileSync(keyFile, crypto.randomBytes(32), { mode: 0o600 });
  const open = () => openPostgresStore(postgresSettings(URL_, { poolSize: 4 }), { keyFile });
  const nodeA: PostgresStore = await open();
  const nodeB: PostgresStore = await open();
  const lmdb = await openStore(path.join(dir, 'lmdb'));
  try {
    // Enrolment in bulk (createMany per account and chunk), the same persons into LMDB for the comparison.
    const templates = Array.from({ length: PERSONS }, randomTemplate);
    const image = crypto.randomBytes(20_000);
    const now = new Date().toISOString();
    let started = performance.now();
    for (let from = 0; from < PERSONS; from += CHUNK * ACCOUNTS) {
      for (let a = 0; a < ACCOUNTS; a++) {
        const batch = [];
        for (let i = from + a; i < Math.min(PERSONS, from + CHUNK * ACCOUNTS); i += ACCOUNTS) {
          batch.push({ personId: `p${i}`, modelId: MODEL, template: templates[i], referenceImage: image });
        }
        if (batch.length) await nodeA.persons.createMany(`acc${a}`, batch, now);
      }
    }
    const insertMs = ms(started);
    for (let i = 0; i < PERSONS; i++) {
      await lmdb.persons.create(accountOf(i), `p${i}`, { modelId: MODEL, template: templates[i], referenceImage: image }, now);
    }

    // Node B starts: rebuild from the table, then follow.
    const rssBefore = process.memoryUsage().rss;
    started = performance.now();
    const follower = new GalleryFollower(nodeB, { modelId: MODEL, waitTimeoutMs: 10_000 });
    const { loaded } = await follower.start();
    const rebuildMs = ms(started);
    const rssMiB = +((process.memoryUsage().rss - rssBefore) / 2 ** 20).toFixed(1);

    const lmdbGalleries = Galleries.forStore(lmdb.persons);
    started = performance.now();
    await lmdbGalleries.rebuild(lmdb.persons, MODEL);
    const lmdbRebuildMs = ms(started);

    // Searches for a known person (a slightly moved copy of an enrolled template), both backends.
    const probes = Array.from({ length: SEARCHES }, (_, i) => {
      const t = templates[(i * 7919) % PERSONS].map((x, j) => x + (j % 2 ? 0.001 : -0.001));
      const norm = Math.hypot(...t);
      return t.map((x) => x / norm);
    });
    const pgSearch = await searchTimes(follower.galleries, probes);
    const lmdbSearch = await searchTimes(lmdbGalleries, probes);

    // Cross-node lag: four writers on A; for each acknowledged write, until B's galleries hold it.
    const lags = await mapLimit(Array.from({ length: 200 }, (_, i) => i), 4, async (i) => {
      await nodeA.persons.create('lag', `w${i}`, { modelId: MODEL, template: randomTemplate(), referenceImage: image }, now);
      const acknowledged = performance.now();
      await follower.reach(await nodeA.changes.lastChange());
      return performance.now() - acknowledged;
    });

    printJsonLine({
      bench: 'scale', persons: PERSONS, accounts: ACCOUNTS, dimension: templateSize(),
      insert: { ms: insertMs, personsPerSecond: Math.round(PERSONS / (insertMs / 1000)) },
      nodeStart: { loaded, rebuildMs, rssMiB, lmdbRebuildMs },
      searchMs: { postgres: stats(pgSearch), lmdb: stats(lmdbSearch) },
      crossNodeLagMs: stats(lags),
    });
    await follower.stop();
    lmdbGalleries.close();
  } finally {
    await nodeA.close();
    await nodeB.close();
    await lmdb.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
