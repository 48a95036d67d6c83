// npm run bench:scale — cloud mode over HTTP with real node processes (bench/scale-node.ts: the service's
// start-up with the tests' fake face engine, so what is compared is the storage and gallery side; with the
// real engine its ~17 ms of CPU per face would dominate every figure on two cores):
// - identify and create throughput and p50/p99: LMDB single node, PostgreSQL single node, PostgreSQL with
//   two nodes (load spread over both), each over a gallery preloaded with BENCH_SCALE_PERSONS persons; the
//   identifies are of persons created while the node ran, and again (LMDB and PostgreSQL single) of persons
//   preloaded before its start, each once;
// - the catch-up lag of node B after a burst of 1,000 creates on node A (B's /metrics follower position), and
//   how many of them A's follower took from their writer instead of reading the log;
// - cross-node visibility: A acknowledged a create -> an identify on B finds the person (p50/p99);
// - a node joining with BENCH_SCALE_JOIN_PERSONS (100k) persons in the database: process start to the first
//   identify served, its resident memory beside an empty node's, and its peak (VmHWM: the build's high mark).
// - the gallery cache (src/storage/postgres/gallery-cache.ts) beside the float32 copies it replaces, over one
//   database of BENCH_SCALE_CACHE_PERSONS (default BENCH_SCALE_JOIN_PERSONS) persons: a node of each, up at
//   once; resident memory per person (anonymous and file-backed apart), the first start (the cache filled)
//   and a restart (from the cache), identify p50/p99 taking turns, and recall@1 of both (each identify of a
//   preloaded person with a photo at cosine 0.9 to it must name that person).
// BENCH_SCALE_ONLY=join runs only the join part (BENCH_SCALE_JOIN_RUNS starts, default 3); =cache the cache part.
// PostgreSQL: BENCH_SCALE_POSTGRES_URL (a server whose user may CREATE DATABASE), else a throwaway server
// (test/helpers/postgres.ts). Ends with one JSON line.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

import { templateModelId, templateSize } from '../src/engine/template-spec';
import { postgresSettings } from '../src/storage/postgres/pool';
import { openPostgresStore } from '../src/storage/postgres/store';
import { openStore } from '../src/storage/lmdb/store';
import { fakePhotoB64, templateFor } from '../test/helpers/fake-engine';
import { startPostgres } from '../test/helpers/postgres';
import { acceptsConnections, mapLimit, percentile, printJsonLine } from './common';
import { describeHost, measureHostInChild } from './host';
import { serviceProcessEnv } from './service-env';
import { freePort } from '../test/helpers/free-port';

const PERSONS = Number(process.env.BENCH_SCALE_PERSONS ?? 20_000);
const JOIN_PERSONS = Number(process.env.BENCH_SCALE_JOIN_PERSONS ?? 100_000);
const CREATES = Number(process.env.BENCH_SCALE_CREATES ?? 1_000);
const IDENTIFIES = Number(process.env.BENCH_SCALE_IDENTIFIES ?? 2_000);
const CONCURRENCY = Number(process.env.BENCH_SCALE_CONCURRENCY ?? 8);
const ROUNDS = 4;
const JOIN_RUNS = Number(process.env.BENCH_SCALE_JOIN_RUNS ?? 3);
const ONLY_JOIN = process.env.BENCH_SCALE_ONLY === 'join';
const ONLY_CACHE = process.env.BENCH_SCALE_ONLY === 'cache';
const CACHE_PERSONS = Number(process.env.BENCH_SCALE_CACHE_PERSONS ?? JOIN_PERSONS);
const VISIBILITY_SAMPLES = 200;
const BURST = 1_000;
const BOOTSTRAP = 'bench-scale-bootstrap-key-0123456789';
const ACCOUNT = 'default';  // the bootstrap key's account
const MODEL = templateModelId();
const NODE_MAIN = path.join(__dirname, 'scale-node.js');

const round = (x: number, digits = 1) => +x.toFixed(digits);
const stats = (v: number[]) => ({ p50: round(percentile(v, 50), 2), p99: round(percentile(v, 99), 2), max: round(Math.max(...v), 2) });

function randomTemplate(): Float32Array {
  const v = Float32Array.from({ length: templateSize() }, () => Math.random() - 0.5);
  let n = 0;
  for (const x of v) n += x * x;
  return v.map((x) => x / Math.sqrt(n));
}

/** Identities of the preloaded persons that photos identify: `${prefix}${i}` is LOADED_IDENTITY + i. */
const LOADED_IDENTITY = 60_001;

/**
 * Preloaded persons in batches, with a small image: the first `identifiable` have the fake engine's template
 * of their identity, the others random templates (no fake identity's photo matches them).
 */
function* preload(count: number, prefix: string, identifiable = 0): Generator<Array<{ personId: string; modelId: string; template: Float32Array; referenceImage: Buffer }>> {
  const image = crypto.randomBytes(2_000);
  for (let from = 0; from < count; from += 1000) {
    yield Array.from({ length: Math.min(1000, count - from) }, (_, k) => {
      const i = from + k;
      const template = i < identifiable ? templateFor(LOADED_IDENTITY + i, 0, 1) : randomTemplate();
      return { personId: `${prefix}${i}`, modelId: MODEL, template, referenceImage: image };
    });
  }
}

interface NodeProcess {
  base: string;
  child: ChildProcess;
  /** Milliseconds from spawn to the first answer of `ready`. */
  startMs: number;
  /** Its log (stdout) so far, up to 1 MiB. */
  output(): string;
  rssMiB(): number;
  /** Resident anonymous memory (heap, index) and file-backed pages (mapped files: the gallery cache's LMDB map). */
  rssParts(): { anonMiB: number; fileMiB: number };
  /** The most it was resident at once (the start-up build's peak). */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

/** A /proc/<pid>/status size field (VmRSS, VmHWM) in MiB. */
function statusMiB(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? round(Number(m[1]) / 1024) : NaN;
}

async function writeIni(dir: string, name: string, storage: string[], logLevel = 'warn'): Promise<{ ini: string; port: number }> {
  const port = await freePort();
  const ini = path.join(dir, `${name}.ini`);
  fs.writeFileSync(ini, [
    '[server]', 'mode = cloud', 'host = 127.0.0.1', `port = ${port}`,
    '[storage]', ...storage,
    '[auth]', `bootstrap_key = ${BOOTSTRAP}`,
    '[log]', `level = ${logLevel}`,
    '[camera]', 'source = none',
  ].join('\n'));
  return { ini, port };
}

/** Spawns a node and polls `ready` (default: the live probe) until it answers 200. */
async function startNode(ini: string, port: number, ready?: (base: string) => Promise<boolean>): Promise<NodeProcess> {
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, [NODE_MAIN, ini], { stdio: ['ignore', 'pipe', 'pipe'], env: serviceProcessEnv() });
  let errors = '';
  let output = '';
  child.stderr!.on('data', (c: Buffer) => { errors += c.toString('utf8'); });
  child.stdout!.on('data', (c: Buffer) => { if (output.length < 1 << 20) output += c.toString('utf8'); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => { gone = true; });
  const check = ready ?? (async (b: string) => (await fetch(`${b}/health/live`)).ok);
  // Until the port accepts a connection, a bare TCP connect every 10 ms: a failing fetch every 10 ms cost
  // this process 0.4-0.6 s of CPU per 100k join, a sixth of the two cores the node starts on (medians 2.87
  // against 2.62 s, six starts each, alternating). Then the check, as a client would ask.
  for (let up = false; ;) {
    if (gone) throw new Error(`node ${ini} exited:\n${errors}`);
    if (performance.now() - started > 120_000) throw new Error(`node ${ini} not ready after 120 s:\n${errors}`);
    up ||= await acceptsConnections(port);
    if (up && await check(base).catch(() => false)) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    base, child, startMs: round(performance.now() - started),
    output: () => output,
    rssMiB: () => statusMiB(child.pid!, 'VmRSS'),
    rssParts: () => ({ anonMiB: statusMiB(child.pid!, 'RssAnon'), fileMiB: statusMiB(child.pid!, 'RssFile') + statusMiB(child.pid!, 'RssShmem') }),
    peakRssMiB: () => statusMiB(child.pid!, 'VmHWM'),
    stop: async () => {
      if (!gone) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function call(base: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method, headers: { 'api-key': BOOTSTRAP, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

const photos = new Map<number, string>();
async function photo(identity: number): Promise<{ faceImage: string }> {
  let b64 = photos.get(identity);
  if (!b64) photos.set(identity, (b64 = await fakePhotoB64({ identity })));
  return { faceImage: b64 };
}

interface Sample { times: number[]; seconds: number }

/** Requests at CONCURRENCY in flight; every answer must have the expected status. */
async function load(label: string, indexes: number[], send: (i: number) => Promise<number>, expected: number): Promise<Sample> {
  const times: number[] = [];
  const started = performance.now();
  await mapLimit(indexes, CONCURRENCY, async (i) => {
    const t0 = performance.now();
    const status = await send(i);
    times.push(performance.now() - t0);
    if (status !== expected) throw new Error(`${label}: request ${i} answered ${status}, expected ${expected}`);
  });
  return { times, seconds: (performance.now() - started) / 1000 };
}

function summary(samples: Sample[]) {
  const times = samples.flatMap((s) => s.times);
  const seconds = samples.reduce((n, s) => n + s.seconds, 0);
  return { perSecond: Math.round(times.length / seconds), ...stats(times) };
}

interface Setup { name: string; nodes: NodeProcess[]; first: number }

/**
 * `n` requests (0..n-1) of `send` for each setup, the setups taking turns in ROUNDS rounds so that other
 * work on the machine meanwhile weighs on each alike; each request must answer 200. Summaries by setup.
 */
async function inTurns(setups: Setup[], label: string, n: number, send: (s: Setup, i: number) => Promise<number>) {
  const samples = new Map<string, Sample[]>(setups.map((s) => [s.name, []]));
  const per = Math.ceil(n / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    const indexes = Array.from({ length: per }, (_, i) => r * per + i).filter((i) => i < n);
    for (const s of setups) samples.get(s.name)!.push(await load(label, indexes, (i) => send(s, i), 200));
  }
  return Object.fromEntries(setups.map((s) => [s.name, summary(samples.get(s.name)!)]));
}

/** The node of a setup that request `i` goes to (round robin). */
const nodeOf = (s: Setup, i: number) => s.nodes[i % s.nodes.length].base;

/** Creates, then identifies of the created persons, for each setup over its nodes. */
async function createAndIdentify(setups: Setup[]) {
  for (const s of setups) await mapLimit(Array.from({ length: CREATES }, (_, i) => s.first + i), 4, photo);  // not measured
  const creates = await inTurns(setups, 'create', CREATES, async (s, i) =>
    (await call(nodeOf(s, i), 'POST', `/person/face/id-${s.first + i}`, await photo(s.first + i))).status);
  const identifies = await inTurns(setups, 'identify', IDENTIFIES, async (s, i) => {
    const identity = s.first + ((i * 7919) % CREATES);
    const res = await call(nodeOf(s, i), 'POST', '/person/recognize-face', await photo(identity));
    if (res.status === 200 && res.body.personId !== `id-${identity}`) throw new Error(`identify ${identity}: ${res.body.personId}`);
    return res.status;
  });
  return Object.fromEntries(setups.map((s) => [s.name, { create: creates[s.name], identify: identifies[s.name] }]));
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/**
 * Identifies of persons that were in the store before the node started, each once (IDENTIFIES of them, the
 * setups taking turns in ROUNDS rounds): the first match of a person since the start, as most identifies of
 * a large gallery are, where the phase above identifies persons created while the node ran.
 */
async function identifyLoaded(setups: Setup[]) {
  await mapLimit(Array.from({ length: IDENTIFIES }, (_, i) => LOADED_IDENTITY + i), 4, photo);  // not measured
  return inTurns(setups, 'identify (loaded at start)', IDENTIFIES, async (s, i) => {
    const res = await call(nodeOf(s, i), 'POST', '/person/recognize-face', await photo(LOADED_IDENTITY + i));
    if (res.status === 200 && res.body.personId !== `pre-${i}`) throw new Error(`identify pre-${i}: ${res.body.personId}`);
    return res.status;
  });
}

/** A node joining a database of JOIN_PERSONS persons: spawn to the first identify (of a person among them) served. */
async function joining(databaseUrl: (name: string) => Promise<string>, pgStorage: (url: string) => string[], keyFile: string,
  dir: string, now: string, started: (n: NodeProcess) => NodeProcess): Promise<object> {
  const joinUrl = await databaseUrl('bench_scale_join');
  const joinAdmin = await openPostgresStore(postgresSettings(joinUrl, { poolSize: 2 }), { keyFile });
  for (const batch of preload(JOIN_PERSONS - 1, 'join-')) await joinAdmin.persons.createMany(ACCOUNT, batch, now);
  await joinAdmin.persons.create(ACCOUNT, 'known', { modelId: MODEL, template: templateFor(50_001, 0, 1), referenceImage: Buffer.from('x') }, now);
  // A joining node meets a database whose rows were written long before: every table vacuumed (the persons
  // and the change log's 100k entries), hint bits set, not one whose autovacuum of a 100k bulk load would
  // run during the measured starts; and checkpointed, so that the first start does not share the cores with
  // the server writing the ~400 MB the vacuum dirtied.
  await joinAdmin.pool.query('VACUUM (ANALYZE)');
  await joinAdmin.pool.query('CHECKPOINT');
  await joinAdmin.close();
  const emptyUrl = await databaseUrl('bench_scale_empty');
  const emptyIni = await writeIni(dir, 'empty', pgStorage(emptyUrl));
  const empty = started(await startNode(emptyIni.ini, emptyIni.port));
  await call(empty.base, 'POST', '/person/recognize-face', await photo(50_001));
  const emptyRss = empty.rssMiB();
  await empty.stop();
  const knownPhoto = await photo(50_001);
  const joinIni = await writeIni(dir, 'join', pgStorage(joinUrl));
  const joins: number[] = [];
  let joinRss = NaN;
  const peaks: number[] = [];
  for (let run = 0; run < JOIN_RUNS; run++) {
    // A node joining has no gallery cache yet (a restart's start from one is the cache part's).
    fs.rmSync(path.join(dir, 'node-files', 'gallery-cache'), { recursive: true, force: true });
    const joined = started(await startNode(joinIni.ini, joinIni.port, async (base) =>
      (await call(base, 'POST', '/person/recognize-face', knownPhoto)).body?.personId === 'known'));
    joins.push(joined.startMs);
    joinRss = joined.rssMiB();
    peaks.push(joined.peakRssMiB());
    await joined.stop();
  }
  return { persons: JOIN_PERSONS, startToFirstIdentifyMs: joins, medianMs: percentile(joins, 50), rssMiB: joinRss, peakRssMiB: peaks, emptyNodeRssMiB: emptyRss,
    bytesPerPerson: Math.round(((joinRss - emptyRss) * 2 ** 20) / JOIN_PERSONS) };
}

/**
 * The gallery cache beside the float32 copies: one database of CACHE_PERSONS persons (the first IDENTIFIES of
 * them identifiable), a node of each kind on it (each its own storage path), their memory, starts, identify
 * latency in turns and recall@1.
 */
async function cacheComparison(databaseUrl: (name: string) => Promise<string>, keyFile: string, dir: string, now: string,
  started: (n: NodeProcess) => NodeProcess): Promise<object> {
  const url = await databaseUrl('bench_scale_cache');
  const memoryOf = (n: NodeProcess, base: { anonMiB: number; fileMiB: number; rssMiB: number }) => {
    const parts = n.rssParts();
    const rss = n.rssMiB();
    const per = (mib: number) => Math.round((mib * 2 ** 20) / CACHE_PERSONS);
    return { rssMiB: rss, ...parts, peakRssMiB: n.peakRssMiB(), bytesPerPerson: per(rss - base.rssMiB), anonBytesPerPerson: per(parts.anonMiB - base.anonMiB),
      fileBytesPerPerson: per(parts.fileMiB - base.fileMiB) };
  };
  const admin = await openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile });
  const t0 = performance.now();
  for (const batch of preload(CACHE_PERSONS, 'c-', IDENTIFIES)) await admin.persons.createMany(ACCOUNT, batch, now);
  const preloadS = round((performance.now() - t0) / 1000);
  await admin.pool.query('VACUUM (ANALYZE)');
  await admin.pool.query('CHECKPOINT');
  await admin.close();
  const storage = (name: string, cache: boolean, dbUrl = url) => ['backend = postgres', `path = ${dir}/${name}`, `postgres_url = ${dbUrl}`,
    `key_file = ${keyFile}`, `gallery_cache = ${cache}`];
  const probe = await photo(LOADED_IDENTITY);
  const ready = async (base: string) => (await call(base, 'POST', '/person/recognize-face', probe)).body?.personId === 'c-0';
  // An empty node of each kind: the baseline the persons' memory is measured from.
  const emptyUrl = await databaseUrl('bench_scale_cache_empty');
  const empty: Record<string, { anonMiB: number; fileMiB: number; rssMiB: number }> = {};
  for (const cache of [false, true]) {
    const ini = await writeIni(dir, `empty-${cache}`, storage(`empty-${cache}`, cache, emptyUrl));
    const n = started(await startNode(ini.ini, ini.port));
    await call(n.base, 'POST', '/person/recognize-face', probe);
    empty[String(cache)] = { ...n.rssParts(), rssMiB: n.rssMiB() };
    await n.stop();
  }
  const floatIni = await writeIni(dir, 'float32', storage('float32', false));
  const cacheIni = await writeIni(dir, 'cached', storage('cached', true));
  const float32 = started(await startNode(floatIni.ini, floatIni.port, ready));
  const fill = started(await startNode(cacheIni.ini, cacheIni.port, ready));
  const fillStart = { startMs: fill.startMs, peakRssMiB: fill.peakRssMiB() };
  const stopping = async (n: NodeProcess) => {
    const t = performance.now();
    await n.stop();
    return round(performance.now() - t);
  };
  // The orderly stop writes the index snapshots; the next start imports them (its log says whether it did).
  const fillStopMs = await stopping(fill);
  const snapIni = await writeIni(dir, 'cached-info', storage('cached', true), 'info');
  const fromSnapshots = started(await startNode(snapIni.ini, snapIni.port, ready));
  const snapshotStart = {
    startMs: fromSnapshots.startMs, peakRssMiB: fromSnapshots.peakRssMiB(), memory: memoryOf(fromSnapshots, empty.true),
    indexSnapshots: /"index_snapshots":"([^"]*)"/.exec(fromSnapshots.output())?.[1],
  };
  const snapshotStopMs = await stopping(fromSnapshots);
  // The comparison node starts from the cache's rows, as a node killed does: without the set the stop wrote.
  fs.rmSync(path.join(dir, 'cached', 'gallery-cache', 'index-snapshots', 'snapshot-set.json'), { force: true });
  const cached = started(await startNode(cacheIni.ini, cacheIni.port, ready));
  const restartMs = cached.startMs;
  const atStart = { float32: memoryOf(float32, empty.false), cached: memoryOf(cached, empty.true) };
  // Photos at cosine 0.9 to a preloaded person's template (not measured).
  const near = await mapLimit(Array.from({ length: IDENTIFIES }, (_, i) => i), 4, (i) => fakePhotoB64({ identity: LOADED_IDENTITY + i, variant: 1, cosine: 0.9 }));
  const correct: Record<string, number> = { float32: 0, cached: 0 };
  const setups = [{ name: 'float32', nodes: [float32], first: 0 }, { name: 'cached', nodes: [cached], first: 0 }];
  const identify = await inTurns(setups, 'identify (cache comparison)', IDENTIFIES, async (s, i) => {
    const res = await call(s.nodes[0].base, 'POST', '/person/recognize-face', { faceImage: near[i] });
    if (res.status === 200 && res.body.personId === `c-${i}`) correct[s.name]++;
    return res.status === 410 ? 200 : res.status;  // a miss (RF_001) counts against recall, not as a failure
  });
  const afterLoad = { float32: memoryOf(float32, empty.false), cached: memoryOf(cached, empty.true) };
  await float32.stop();
  await cached.stop();
  return {
    persons: CACHE_PERSONS, preloadS, emptyNodes: empty,
    memoryAtStart: atStart, memoryAfterIdentifies: afterLoad,
    starts: {
      float32Ms: float32.startMs, cacheFillMs: fillStart.startMs, cacheFillPeakRssMiB: fillStart.peakRssMiB, fromCacheMs: restartMs,
      fromSnapshotsMs: snapshotStart.startMs, fromSnapshotsPeakRssMiB: snapshotStart.peakRssMiB, indexSnapshots: snapshotStart.indexSnapshots,
      fromSnapshotsMemory: snapshotStart.memory,
    },
    stops: { writingSnapshotsMs: [fillStopMs, snapshotStopMs] },
    identify,
    identifyP50CachedOverFloat32: round(identify.cached.p50 / identify.float32.p50, 2),
    recallAt1: { float32: correct.float32 / IDENTIFIES, cached: correct.cached / IDENTIFIES },
  };
}

async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const c = new Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  // First, while nothing else of the bench runs: what this host charges for a start (see bench/host.ts).
  const host = measureHostInChild();
  console.log(describeHost(host));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'));
  const ownServer = process.env.BENCH_SCALE_POSTGRES_URL ? undefined : await startPostgres();
  const serverUrl = process.env.BENCH_SCALE_POSTGRES_URL ?? ownServer!.url;
  const databaseUrl = async (name: string): Promise<string> => {
    await dropDatabase(serverUrl, name);
    const c = new Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE ${name}`);
    } finally {
      await c.end();
    }
    const u = new URL(serverUrl);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const keyFile = path.join(dir, 'cluster.key');
  fs.writeFileSync(keyFile, crypto.randomBytes(32), { mode: 0o600 });
  const pgStorage = (url: string) => ['backend = postgres', `path = ${dir}/node-files`, `postgres_url = ${url}`, `key_file = ${keyFile}`];
  const running: NodeProcess[] = [];
  const started = (n: NodeProcess) => { running.push(n); return n; };
  try {
    const now = new Date().toISOString();
    if (ONLY_CACHE) {
      printJsonLine({ bench: 'scale', only: 'cache', cpus: os.cpus().length, host, cache: await cacheComparison(databaseUrl, keyFile, dir, now, started) });
      return;
    }
    if (ONLY_JOIN) {
      printJsonLine({ bench: 'scale', only: 'join', cpus: os.cpus().length, host, join: await joining(databaseUrl, pgStorage, keyFile, dir, now, started) });
      return;
    }
    // LMDB, one node.
    const lmdbDir = path.join(dir, 'lmdb');
    const lmdb = await openStore(lmdbDir);
    for (const batch of preload(PERSONS, 'pre-', IDENTIFIES)) await lmdb.persons.createMany(ACCOUNT, batch, now);
    await lmdb.close();
    const lmdbIni = await writeIni(dir, 'lmdb', [`path = ${lmdbDir}`]);
    const lmdbNode = started(await startNode(lmdbIni.ini, lmdbIni.port));

    // PostgreSQL, one node (taking turns with LMDB's), then a second node with the load spread over both.
    const clusterUrl = await databaseUrl('bench_scale_cluster');
    const admin = await openPostgresStore(postgresSettings(clusterUrl, { poolSize: 2 }), { keyFile });
    let t0 = performance.now();
    for (const batch of preload(PERSONS, 'pre-', IDENTIFIES)) await admin.persons.createMany(ACCOUNT, batch, now);
    const preloadPerSecond = Math.round(PERSONS / ((performance.now() - t0) / 1000));
    const iniA = await writeIni(dir, 'a', pgStorage(clusterUrl));
    const iniB = await writeIni(dir, 'b', pgStorage(clusterUrl));
    const a = started(await startNode(iniA.ini, iniA.port));
    const single = await createAndIdentify([{ name: 'lmdb', nodes: [lmdbNode], first: 1 }, { name: 'postgres', nodes: [a], first: 10_001 }]);
    const lmdbRun = single.lmdb;
    const pgSingle = single.postgres;
    const loaded = await identifyLoaded([{ name: 'lmdb', nodes: [lmdbNode], first: 0 }, { name: 'postgres', nodes: [a], first: 0 }]);
    await lmdbNode.stop();
    const b = started(await startNode(iniB.ini, iniB.port));
    const pgPair = (await createAndIdentify([{ name: 'pair', nodes: [a, b], first: 20_001 }])).pair;

    // Catch-up: a burst of creates on A; B's follower position (its /metrics) until it holds the last.
    await mapLimit(Array.from({ length: BURST }, (_, i) => 30_001 + i), 4, photo);
    let maxBehind = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        maxBehind = Math.max(maxBehind, await metric(b.base, 'face_check_change_follower_behind').catch(() => 0));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    // How many of the burst's creates A's follower took from their writer (ChangeFollower.offer) rather than
    // from the log: A alone writes during the burst; an offer made while the follower was reading is dropped.
    const offeredBefore = await metric(a.base, 'face_check_change_follower_offered_total');
    t0 = performance.now();
    await load('burst', Array.from({ length: BURST }, (_, i) => i), async (i) =>
      (await call(a.base, 'POST', `/person/face/burst-${i}`, await photo(30_001 + i))).status, 200);
    const burstMs = performance.now() - t0;
    const takenFromWriter = (await metric(a.base, 'face_check_change_follower_offered_total')) - offeredBefore;
    const lastAcknowledged = performance.now();
    const target = await admin.changes.lastChange();
    while (await metric(b.base, 'face_check_change_follower_position') < target) await new Promise((r) => setTimeout(r, 1));
    const catchUpMs = round(performance.now() - lastAcknowledged);
    watching = false;
    await watcher;

    // Visibility: one create at a time on A; from its 200, identifies on B until B names the person.
    await mapLimit(Array.from({ length: VISIBILITY_SAMPLES }, (_, i) => 40_001 + i), 4, photo);
    const visibility: number[] = [];
    for (let i = 0; i < VISIBILITY_SAMPLES; i++) {
      const identity = 40_001 + i;
      const body = await photo(identity);
      const created = await call(a.base, 'POST', `/person/face/vis-${identity}`, body);
      if (created.status !== 200) throw new Error(`visibility create: ${created.status}`);
      const acknowledged = performance.now();
      for (;;) {
        const found = await call(b.base, 'POST', '/person/recognize-face', body);
        if (found.status === 200 && found.body.personId === `vis-${identity}`) break;
        if (performance.now() - acknowledged > 10_000) throw new Error(`vis-${identity} not visible on B after 10 s`);
      }
      visibility.push(performance.now() - acknowledged);
    }
    await a.stop();
    await b.stop();
    await admin.close();
    // Done with: dropped, so that the server's autovacuum of its ~25k persons and changes cannot run during
    // the join's starts.
    await dropDatabase(serverUrl, 'bench_scale_cluster');

    const join = await joining(databaseUrl, pgStorage, keyFile, dir, now, started);
    await dropDatabase(serverUrl, 'bench_scale_join');
    const cache = await cacheComparison(databaseUrl, keyFile, dir, now, started);

    const result = {
      bench: 'scale', persons: PERSONS, rounds: ROUNDS, dimension: templateSize(), concurrency: CONCURRENCY, cpus: os.cpus().length,
      engine: 'fake (tests\' engine: the storage and gallery side only)',
      lmdbSingle: lmdbRun, postgresSingle: pgSingle, postgresTwoNodes: pgPair,
      ratios: {
        identifyPostgresOverLmdb: round(pgSingle.identify.perSecond / lmdbRun.identify.perSecond, 2),
        createP99PostgresOverLmdb: round(pgSingle.create.p99 / lmdbRun.create.p99, 2),
        identifyLoadedPostgresOverLmdb: round(loaded.postgres.perSecond / loaded.lmdb.perSecond, 2),
      },
      identifyLoadedAtStart: loaded,
      preloadPersonsPerSecond: preloadPerSecond,
      burst: { creates: BURST, onNodeA: { perSecond: Math.round(BURST / (burstMs / 1000)), takenFromWriter }, nodeBCatchUpMsAfterLastAck: catchUpMs, nodeBMaxBehindSeqs: maxBehind },
      crossNodeVisibilityMs: stats(visibility),
      join,
      cache,
      host,
      twoCores: 'the database server, every node and this load generator share the machine\'s cores: two nodes show ' +
        'that the cluster is correct and what coordination costs (follower, locks, change log), not added capacity; ' +
        'throughput per added node needs nodes on their own cores',
    };
    printJsonLine(result);
  } finally {
    for (const n of running) await n.stop().catch(() => undefined);
    await ownServer?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
