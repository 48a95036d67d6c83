// A captured signed request is accepted once, whatever else is tried with it: the 47 other spellings of its
// signature (the unused bits of the last base64 character, and the padding present, short or absent) are
// refused on the node that accepted it, on a second PostgreSQL node of the same database, and on an LMDB node
// restarted inside the timestamp window (by SIGTERM and by kill -9).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { buildApp } from '../../src/http/app';
import { GalleryFollower } from '../../src/matching/gallery-follower';
import { postgresSettings } from '../../src/storage/postgres/pool';
import { openPostgresStore } from '../../src/storage/postgres/store';
import { openStore } from '../../src/storage/lmdb/store';
import { generateRsaKeyPair } from '../../src/storage/records';
import { defaultConfig } from '../../src/config/load';
import { BOOTSTRAP_KEY, startTestApp, tempDir } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { FakeEngine } from '../helpers/fake-engine';
import { postgresCluster, postgresSkipReason } from '../helpers/postgres';
import { startServiceProcess, writeIni } from '../helpers/service-process';

const BASE = 'https://faces.example.com';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Every base64 text Node decodes to `bytes`: the canonical one first. */
export function spellings(bytes: Buffer): string[] {
  const canonical = bytes.toString('base64');
  const padding = canonical.length - canonical.replace(/=+$/, '').length;
  const unusedBits = padding === 2 ? 4 : padding === 1 ? 2 : 0;
  const body = canonical.slice(0, canonical.length - padding);
  const last = ALPHABET.indexOf(body[body.length - 1]);
  const out: string[] = [];
  for (let low = 0; low < 1 << unusedBits; low++) {
    const stem = body.slice(0, -1) + ALPHABET[last | low];
    for (let pad = padding; pad >= 0; pad--) out.push(stem + '='.repeat(pad));
  }
  // Distinct texts, and each one really decodes to the same bytes (so each is an attack, not a typo).
  for (const s of out) if (!Buffer.from(s, 'base64').equals(bytes)) throw new Error(`${s} is not a spelling`);
  return [...new Set(out)];
}

interface Signed { url: string; signature: Buffer; timestamp: string }

function signGet(privateKey: string, url: string, base = BASE): Signed {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return { url, timestamp, signature: crypto.sign('sha256', Buffer.from(`${base}${url}${timestamp}`), privateKey) };
}

function headers(apiKey: string, s: Signed, spelling: string) {
  return { 'api-key': apiKey, signature: spelling, timestamp: s.timestamp };
}

t.test('the 48 spellings of a 2048-bit signature: each decodes alike, and the generator finds them all', async (t) => {
  const { privateKey } = await generateRsaKeyPair();
  const all = spellings(signGet(privateKey, '/person/face/x').signature);
  t.equal(all.length, 48);
  t.equal(all[0], all[0].replace(/=*$/, '') + '==', 'the canonical one is padded');
});

t.test('one node (LMDB): the captured request is accepted once, every re-spelling is refused', async (t) => {
  const a = await startTestApp({ tune: (c) => { c.auth.public_base_url = BASE; } });
  t.teardown(() => a.close());
  const pair = await generateRsaKeyPair();
  const { key } = await a.store.apiKeys.create('ent', 'full', 'enterprise', new Date().toISOString(), pair.publicKey);
  const captured = signGet(pair.privateKey, '/person/face/x');
  const [canonical, ...others] = spellings(captured.signature);

  // A re-spelling sent first is refused too: only the canonical text is a signature header.
  const early = await a.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, others[5]) });
  t.equal(early.statusCode, 401, 'a non-canonical spelling is never accepted');
  const first = await a.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, canonical) });
  t.equal(first.statusCode, 404, 'the signed request itself is served (no such person)');
  const accepted: string[] = [];
  for (const s of [canonical, ...others]) {
    const res = await a.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, s) });
    if (res.statusCode !== 401) accepted.push(`${s}: ${res.statusCode}`);
  }
  t.same(accepted, [], 'all 48 spellings refused after the first acceptance');
});

t.test('a signature shorter than the modulus (a leading zero byte dropped) is refused', async (t) => {
  const pair = await generateRsaKeyPair();
  // A request whose signature starts with a zero byte (about one in 256): OpenSSL would read the 255
  // remaining bytes as the same number. Searched before the app starts, whose overload guard would see the
  // busy event loop.
  let captured: Signed | undefined;
  for (let i = 0; i < 4000 && !captured; i++) {
    const s = signGet(pair.privateKey, `/person/face/p${i}`);
    if (s.signature[0] === 0) captured = s;
  }
  if (!captured) throw new Error('no signature with a leading zero byte in 4000 tries (chance about 1e-7)');
  const a = await startTestApp({ tune: (c) => { c.auth.public_base_url = BASE; } });
  t.teardown(() => a.close());
  const { key } = await a.store.apiKeys.create('ent', 'full', 'enterprise', new Date().toISOString(), pair.publicKey);
  const short = captured.signature.subarray(1).toString('base64');
  const res = await a.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, short) });
  t.equal(res.statusCode, 401, 'the 255-byte spelling is refused');
  const full = await a.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, captured.signature.toString('base64')) });
  t.equal(full.statusCode, 404, 'the full signature is served once');
});

t.test('an LMDB node restarted inside the window still refuses the captured request (SIGTERM and kill -9)', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = writeIni(dir, `[auth]\npublic_base_url = ${BASE}`);
  // The enterprise key is made in the store before the first start, as `face-check keys create` would.
  const pair = await generateRsaKeyPair();
  const store = await openStore(path.join(dir, 'store'));
  const { key } = await store.apiKeys.create('ent', 'full', 'enterprise', new Date().toISOString(), pair.publicKey);
  await store.close();

  const send = (address: string, s: Signed, spelling: string) =>
    fetch(`${address}${s.url}`, { headers: headers(key, s, spelling) }).then((r) => r.status);
  let service = await startServiceProcess(ini, 'fake');
  try {
    const captured = signGet(pair.privateKey, '/person/face/x', BASE);
    const canonical = captured.signature.toString('base64');
    t.equal(await send(service.address, captured, canonical), 404, 'accepted before the restart');
    const second = signGet(pair.privateKey, '/person/face/y', BASE);
    t.equal(await send(service.address, second, second.signature.toString('base64')), 404, 'a second one accepted');

    t.equal(await service.stop(), 0, 'stopped by SIGTERM');
    service = await startServiceProcess(ini, 'fake');
    t.equal(await send(service.address, captured, canonical), 401, 'refused after a SIGTERM restart');

    await service.kill9();
    service = await startServiceProcess(ini, 'fake');
    t.equal(await send(service.address, second, second.signature.toString('base64')), 401, 'refused after kill -9 and a start');
    const statuses = await Promise.all(spellings(captured.signature).map((s) => send(service.address, captured, s)));
    t.same([...new Set(statuses)], [401], 'and so is every spelling');
    const fresh = signGet(pair.privateKey, '/person/face/z', BASE);
    t.equal(await send(service.address, fresh, fresh.signature.toString('base64')), 404, 'a new signed request is served');
  } finally {
    await service.stop();
  }
});

const pgSkip = postgresSkipReason();
t.test('two PostgreSQL nodes: accepted by one, every spelling refused by both', { skip: pgSkip }, async (t) => {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('signing_replay');
  const config = defaultConfig(dir);
  config.auth.public_base_url = BASE;
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  const nodes = await Promise.all([0, 1].map(async () => {
    const store = await openPostgresStore(postgresSettings(url, { poolSize: 4 }), { keyFile: path.join(dir, 'node.key') });
    const engine = new FakeEngine();
    const follower = new GalleryFollower(store, { modelId: engine.modelId, waitTimeoutMs: 5_000 });
    await follower.start();
    const app = await buildApp({ config, engine, store, errors: testErrorCatalog(), galleries: follower.galleries, galleryFeed: follower });
    return { store, app, follower };
  }));
  t.teardown(async () => {
    for (const n of nodes) {
      await n.app.close();
      await n.follower.stop();
      await n.store.close();
    }
  });
  const pair = await generateRsaKeyPair();
  const { key } = await nodes[0].store.apiKeys.create('ent', 'full', 'enterprise', new Date().toISOString(), pair.publicKey);
  const captured = signGet(pair.privateKey, '/person/face/x');
  const [canonical, ...others] = spellings(captured.signature);
  const first = await nodes[0].app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, canonical) });
  t.equal(first.statusCode, 404, 'node A serves the signed request');
  const statuses: number[] = [];
  for (const s of [canonical, ...others]) {
    for (const n of nodes) statuses.push((await n.app.inject({ method: 'GET', url: captured.url, headers: headers(key, captured, s) })).statusCode);
  }
  t.equal(statuses.length, 96);
  t.same([...new Set(statuses)], [401], 'refused on both nodes, every spelling');
});
