// The program: face-check keys create|list|revoke, reindex, and serve (first start creates and
// prints one API key, later starts do not).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { main, parseArgs } from '../../src/cli/main';
import { defaultConfig } from '../../src/config/load';
import { ensureFirstKey, FIRST_KEY_FILE, startService, stdoutIsJournal } from '../../src/start/start-service';
import { reindex } from '../../src/services/reindex';
import { openStore } from '../../src/storage/lmdb/store';
import { FAKE_MODEL_ID, FakeEngine, fakePhotoB64, OTHER_MODEL_IDS } from '../helpers/fake-engine';
import { testErrorCatalog, repoRoot } from '../helpers/errors';
import { startTestApp, tempDir } from '../helpers/app';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

function iniIn(dir: string, extra = ''): string {
  const file = path.join(dir, 'test.ini');
  fs.writeFileSync(file, `[server]\nport = 0\n[storage]\npath = ./db\n${extra}`);
  return file;
}

t.test('keys create | list | revoke', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = iniIn(dir);
  const c = capture();
  t.equal(await main(['keys', 'create', '--config', ini, '--account', 'acme', '--role', 'match', '--label', 'gate 1'], c.io), 0);
  const key = c.out.find((l) => l.startsWith('Api-Key: '))!.slice(9);
  t.match(key, /^fc_/);
  const keyId = /created key ([0-9a-f]{12})/.exec(c.out[0])![1];

  const l = capture();
  t.equal(await main(['keys', 'list', `--config=${ini}`], l.io), 0);
  t.equal(l.out.length, 2);
  t.match(l.out[1], new RegExp(`^${keyId}\tacme\tmatch\t\\S+\t-\tno\tgate 1$`));
  t.notMatch(l.out.join('\n'), key, 'the key itself is never listed');

  const r = capture();
  t.equal(await main(['keys', 'revoke', '--config', ini, keyId], r.io), 0);
  const l2 = capture();
  await main(['keys', 'list', '--config', ini], l2.io);
  t.notMatch(l2.out[1], /\t-\t/, 'revocation time listed');
  const missing = capture();
  t.equal(await main(['keys', 'revoke', '--config', ini, 'ffffffffffff'], missing.io), 1);

  const bad = capture();
  t.equal(await main(['keys', 'create', '--config', ini, '--role', 'root'], bad.io), 2);
  t.match(bad.err[0], /--role/);
});

t.test('keys create --signing | --public-key, keys service-public-key (spec 5)', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = iniIn(dir);
  const c = capture();
  t.equal(await main(['keys', 'create', '--config', ini, '--account', 'ent', '--signing'], c.io), 0);
  const text = c.out.join('\n');
  t.match(c.out[0], /signs its requests/);
  const privateKey = /(-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----)/.exec(text)![1];
  const servicePem = /(-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----)/.exec(text)![1];
  const s = capture();
  t.equal(await main(['keys', 'service-public-key', '--config', ini], s.io), 0);
  t.equal(s.out.join('\n'), servicePem, 'the service key printed at creation is the one the service uses');

  // The stored public key is the printed private key's other half.
  const store = await openStore(path.join(dir, 'db'));
  const record = store.apiKeys.list()[0];
  await store.close();
  const signature = crypto.sign('sha256', Buffer.from('x'), privateKey);
  t.ok(crypto.verify('sha256', Buffer.from('x'), record.signingPublicKey!, signature));

  const own = path.join(dir, 'own.pem');
  fs.writeFileSync(own, crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
  const o = capture();
  t.equal(await main(['keys', 'create', '--config', ini, '--public-key', own], o.io), 0);
  t.notMatch(o.out.join('\n'), /PRIVATE KEY/, 'a client\'s own key: nothing private printed');
  const l = capture();
  await main(['keys', 'list', '--config', ini], l.io);
  t.same(l.out.slice(1).map((line) => line.split('\t')[5]), ['yes', 'yes']);

  const weak = path.join(dir, 'weak.pem');
  fs.writeFileSync(weak, crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }));
  for (const args of [['--public-key', weak], ['--public-key', path.join(dir, 'missing.pem')], ['--signing', '--public-key', own]]) {
    const bad = capture();
    t.equal(await main(['keys', 'create', '--config', ini, ...args], bad.io), 2, args.join(' '));
  }
});

t.test('usage and configuration errors', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const u = capture();
  t.equal(await main([], u.io), 2);
  t.match(u.out[0], /usage/);
  t.equal(await main(['frobnicate'], capture().io), 2);
  t.equal(await main(['serve', '--colour'], capture().io), 2);
  const ini = iniIn(dir, '[matching]\nidentify_treshold = 98\n');
  const c = capture();
  t.equal(await main(['keys', 'list', '--config', ini], c.io), 78);
  t.match(c.err[0], /\[matching\] identify_treshold: unknown key/);
  t.same(parseArgs(['serve', '--config', 'a.ini', '--all']).flags, new Map<string, string | true>([['config', 'a.ini'], ['all', true]]));
});

t.test('serve: first start creates and prints one API key; it works over HTTP; later starts print none', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  config.server.port = 0;
  const printed: string[] = [];
  const opts = { engine: new FakeEngine(), errors: testErrorCatalog(), logger: false as const, print: (l: string) => printed.push(l) };
  const s1 = await startService(config, opts);
  const key = printed.find((l) => l.includes('Api-Key: '))!.split('Api-Key: ')[1];
  t.match(key, /^fc_/);
  const faceImage = await fakePhotoB64({ identity: 1 });
  const res = await fetch(`${s1.address}/person/face/p1`, {
    method: 'POST', headers: { 'Api-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ faceImage }),
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/json');
  t.ok(res.headers.get('request-id'));
  await s1.close();

  printed.length = 0;
  const s2 = await startService(config, { ...opts, engine: new FakeEngine() });
  t.same(printed, [], 'no new key on later starts');
  const again = await fetch(`${s2.address}/person/face/p1`, { headers: { 'Api-Key': key } });
  t.equal(again.status, 200, 'the person and the key persisted');
  await s2.close();
});

t.test('reindex recomputes templates of another model from the stored images; created/updated stay', async (t) => {
  const dir = tempDir();
  const a = await startTestApp({ dir, engine: new FakeEngine(OTHER_MODEL_IDS[0]) });
  const before = (await a.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: await fakePhotoB64({ identity: 1 }) } })).json();
  await a.stop();

  const store = await openStore(a.config.storage.path);
  const progress: string[] = [];
  const report = await reindex(a.config, lmdbAsyncStore(store), new FakeEngine(FAKE_MODEL_ID), { progress: (l) => progress.push(l) });
  t.same([report.done, report.skipped, report.failed], [1, 0, []]);
  t.same(progress, ['reindexed default/alice']);
  const again = await reindex(a.config, lmdbAsyncStore(store), new FakeEngine(FAKE_MODEL_ID));
  t.same([again.done, again.skipped], [0, 1], 'current templates are skipped');
  t.same((await reindex(a.config, lmdbAsyncStore(store), new FakeEngine(FAKE_MODEL_ID), { all: true })).done, 1, '--all recomputes');
  t.equal(store.persons.get('default', 'alice')!.modelId, FAKE_MODEL_ID);
  await store.close();

  const b = await startTestApp({ dir, engine: new FakeEngine(FAKE_MODEL_ID) });
  t.teardown(() => b.close());
  const res = await b.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await fakePhotoB64({ identity: 1 }) } });
  t.same(res.json(), before, 'identify works again with the same created/updated');
});

t.test('bin/face-check.js runs the compiled CLI', { skip: fs.existsSync(path.join(repoRoot, 'dist', 'src', 'cli', 'main.js')) ? false : 'dist/ not built (npm run build:ts)' }, async (t) => {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'bin', 'face-check.js'), '--help'], { encoding: 'utf8' });
  t.equal(r.status, 0);
  t.match(r.stdout, /face-check serve/);
});

t.test('first key under systemd: written to a 0600 file in the store, never printed to the journal', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(path.join(dir, 'store'));
  t.teardown(() => store.close());
  const printed: string[] = [];
  const key = await ensureFirstKey(lmdbAsyncStore(store), store.path, (l) => printed.push(l), new Date(), true);
  t.match(key, /^fc_/);
  t.notMatch(printed.join('\n'), key!, 'the key is not in what was printed');
  const file = path.join(store.path, FIRST_KEY_FILE);
  t.match(printed.join('\n'), file, 'the file is named');
  t.equal(fs.readFileSync(file, 'utf8'), `Api-Key: ${key}\n`);
  t.equal(fs.statSync(file).mode & 0o777, 0o600);
  t.equal(store.apiKeys.lookup(key!)?.role, 'full', 'the key in the file works');
  t.notOk(stdoutIsJournal({ JOURNAL_STREAM: '1:2' }), 'an inherited JOURNAL_STREAM naming another stream is not the journal');
});
