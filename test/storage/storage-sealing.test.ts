// Data at rest: templates, reference images and the service's private key are sealed (AES-256-GCM under a
// data key wrapped by the key file); a sealed value opens only at its own place and only unchanged; the store
// refuses a wrong, missing or malformed key file; folder and files are private; plain schema-2 stores are
// sealed on first open, resumably.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import t from 'tap';

import { Galleries } from '../../src/matching/galleries';
import { unlockDataKey } from '../../src/storage/crypto/data-key';
import { DataKeySealer, personPlaceParts, placeOf, type Sealer } from '../../src/storage/crypto/sealer';
import { sealPlainStore } from '../../src/storage/lmdb/seal-migration';
import { ServiceKeyRepository } from '../../src/storage/lmdb/service-key';
import { openStore, DEFAULT_KEY_FILE } from '../../src/storage/lmdb/store';
import { encodeSegment, emptySegment, withAppended } from '../../src/storage/lmdb/template-segment';
import { tempDir } from '../helpers/app';
import { FAKE_MODEL_ID, templateFor } from '../helpers/fake-engine';

const MODEL = FAKE_MODEL_ID;
const NOW = '2024-01-01T00:00:00.000Z';

const bytesOf = (f: Float32Array) => Buffer.from(f.buffer, f.byteOffset, f.byteLength);
const sameTemplate = (a: Float32Array | undefined, b: Float32Array) => !!a && bytesOf(a).equals(bytesOf(b));
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;
const rawFile = (dir: string) => fs.readFileSync(path.join(dir, 'data.mdb'));

/** A JPEG-like image of 2 KB that no other value resembles, the same for the same i. */
function imageFor(i: number): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), crypto.createHash('shake256', { outputLength: 2048 }).update(`image ${i}`).digest()]);
}

t.test('the raw store holds no reference image, template or private key; everything reads back', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  const images = Array.from({ length: 40 }, (_, i) => imageFor(i));
  const templates = Array.from({ length: 40 }, (_, i) => templateFor(i, 0, 1));
  for (let i = 0; i < 5; i++) {
    t.ok((await store.persons.create('acc', `p${i}`, { modelId: MODEL, template: templates[i], referenceImage: images[i] }, NOW)).created);
  }
  await store.persons.createMany('bulk', Array.from({ length: 35 }, (_, k) => ({
    personId: `q${k}`, modelId: MODEL, template: templates[5 + k], referenceImage: images[5 + k],
  })), NOW);
  const pem = (await store.serviceKeys.responseSigning()).privateKey;
  await store.close();

  const raw = rawFile(dir);
  const pemBody = pem.split('\n')[1];  // one base64 line of the key
  t.equal(pemBody.length, 64);
  for (let i = 0; i < 40; i++) {
    t.equal(raw.indexOf(images[i].subarray(4, 68)), -1, `image ${i} not in data.mdb`);
    t.equal(raw.indexOf(bytesOf(templates[i]).subarray(0, 64)), -1, `template ${i} not in data.mdb`);
  }
  t.equal(raw.indexOf(Buffer.from(pemBody)), -1, 'private key PEM not in data.mdb');
  t.equal(raw.indexOf(Buffer.from('PRIVATE KEY')), -1);

  // The search finds such bytes when they are there: the same values written plain.
  const control = open({ path: path.join(dir, 'control'), compression: false });
  await control.put('img', images[3]);
  await control.put('tpl', bytesOf(templates[3]));
  await control.put('pem', pem);
  await control.close();
  const plain = fs.readFileSync(path.join(dir, 'control', 'data.mdb'));
  t.not(plain.indexOf(images[3].subarray(4, 68)), -1, 'control: a plain image is found');
  t.not(plain.indexOf(bytesOf(templates[3]).subarray(0, 64)), -1, 'control: a plain template is found');
  t.not(plain.indexOf(Buffer.from(pemBody)), -1, 'control: a plain PEM is found');

  store = await openStore(dir);
  t.teardown(() => store.close());
  for (let i = 0; i < 5; i++) {
    t.ok(sameTemplate(store.persons.get('acc', `p${i}`)?.template, templates[i]), `p${i} template reads back`);
    t.same(store.persons.referenceImage('acc', `p${i}`), images[i], `p${i} image reads back`);
  }
  t.same(store.persons.referenceImage('bulk', 'q34'), images[39]);
  t.equal((await store.serviceKeys.responseSigning()).privateKey, pem, 'the private key reads back');
  const galleries = new Galleries();
  t.teardown(() => galleries.close());
  t.same(await galleries.rebuild(store.persons, MODEL), { loaded: 40, stale: 0 }, 'the rebuild decrypts every segment');
  t.ok((await galleries.of('bulk').get('q7'))!.every((v, k) => v === templates[12][k]));
});

t.test('a sealed value moved to another record, or changed, does not open', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let store = await openStore(dir);
  for (const [account, id, seed] of [['a', 'p1', 1], ['a', 'p2', 2], ['b', 'p1', 3]] as const) {
    await store.persons.create(account, id, { modelId: MODEL, template: templateFor(seed, 0, 1), referenceImage: imageFor(seed) }, NOW);
  }
  await store.serviceKeys.responseSigning();
  await store.close();

  const env = open({ path: dir, compression: false });
  const images = env.openDB<Buffer, [string, string]>({ name: 'images', encoding: 'binary' });
  const segments = env.openDB<Buffer, [string, string, number]>({ name: 'templates', encoding: 'binary' });
  const keys = env.openDB<Record<string, unknown>, string>({ name: 'service-keys' });
  await images.put(['a', 'p2'], Buffer.from(images.get(['a', 'p1'])!));           // another person's image
  await segments.put([MODEL, 'b', 0], Buffer.from(segments.get([MODEL, 'a', 0])!));  // another account's segment
  const pair = keys.get('response-signing')!;
  const sealedKey = Buffer.from(pair.sealedPrivateKey as Uint8Array);
  sealedKey[sealedKey.length - 40] ^= 1;
  await keys.put('response-signing', { ...pair, sealedPrivateKey: sealedKey });
  await env.close();

  store = await openStore(dir);
  t.teardown(() => store.close());
  t.same(store.persons.referenceImage('a', 'p1'), imageFor(1), 'the original place still opens');
  t.throws(() => store.persons.referenceImage('a', 'p2'), { name: 'SealError', message: /does not open/ }, 'image moved to another person');
  t.throws(() => store.persons.get('b', 'p1'), { name: 'SealError' }, 'segment moved to another account');
  t.throws(() => [...store.persons.templateBlocks(MODEL)], { name: 'SealError' }, 'the rebuild stops at it, no garbage');
  await t.rejects(store.serviceKeys.responseSigning(), { name: 'SealError' }, 'one flipped bit in the private key');
  await store.close();

  // One flipped byte in a segment's ciphertext.
  const env2 = open({ path: dir, compression: false });
  const segs2 = env2.openDB<Buffer, [string, string, number]>({ name: 'templates', encoding: 'binary' });
  const s = Buffer.from(segs2.get([MODEL, 'a', 0])!);
  s[20] ^= 0x80;
  await segs2.put([MODEL, 'a', 0], s);
  await env2.close();
  store = await openStore(dir);
  t.throws(() => store.persons.get('a', 'p1'), { name: 'SealError', message: /wrong key, damaged, or moved/ });
  t.equal(store.persons.meta('a', 'p1')?.personId, 'p1', 'metadata (not sealed) still reads');
});

t.test('a person\'s place built from its parts is the sealer\'s place, whatever the ids hold', async (t) => {
  for (const [account, person, model] of [['acme', 'p-1', 'm@1'], ['a"b', 'ä\\\u0000\u2028 x', 'model "q"'], ['', '', '']]) {
    const { prefix, suffix } = personPlaceParts('person-templates', account, model);
    t.same(Buffer.from(`${prefix}${JSON.stringify(person)}${suffix}`, 'utf8'), placeOf('person-templates', [account, person, model]));
  }
});

t.test('key file: reopen with it; a wrong, missing, malformed or unreadable one is refused, none is made', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  const keyFile = path.join(db, DEFAULT_KEY_FILE);
  let store = await openStore(db);
  t.equal(store.keyFile, keyFile, 'default: inside the store folder');
  await store.persons.create('a', 'p', { modelId: MODEL, template: templateFor(1, 0, 1), referenceImage: imageFor(1) }, NOW);
  await store.close();
  t.equal(fs.statSync(keyFile).size, 32);

  store = await openStore(db);
  t.same(store.persons.referenceImage('a', 'p'), imageFor(1), 'the right key opens it');
  await store.close();

  const good = fs.readFileSync(keyFile);
  fs.writeFileSync(keyFile, crypto.randomBytes(32));
  await t.rejects(openStore(db), { name: 'StoreKeyError', message: new RegExp(`key file ${keyFile} does not open this store`) });
  fs.writeFileSync(keyFile, good.subarray(0, 5));
  await t.rejects(openStore(db), { message: /holds 5 bytes; a key file is exactly 32/ });
  fs.rmSync(keyFile);
  fs.mkdirSync(keyFile);
  await t.rejects(openStore(db), { message: /is unreadable \(EISDIR\)/ });
  fs.rmdirSync(keyFile);
  await t.rejects(openStore(db), { message: /key file .* is missing; this store is sealed/ });
  t.notOk(fs.existsSync(keyFile), 'no new key is made for an existing store');

  // A key file elsewhere (the ini's key_file): the store opens with it and the default path stays unused.
  const elsewhere = path.join(dir, 'secrets', 'store.key');
  fs.mkdirSync(path.dirname(elsewhere));
  fs.writeFileSync(elsewhere, good);
  store = await openStore(db, { keyFile: elsewhere });
  t.same(store.persons.referenceImage('a', 'p'), imageFor(1));
  await store.close();
  t.notOk(fs.existsSync(keyFile));

  // A new store with a key file given that does not exist yet: made, 0600.
  const fresh = path.join(dir, 'fresh.key');
  store = await openStore(path.join(dir, 'db2'), { keyFile: fresh });
  await store.close();
  t.equal(fs.statSync(fresh).size, 32);
  t.equal(modeOf(fresh), 0o600);
});

t.test('file modes: folder 0700, LMDB and key files 0600; an existing loose store is tightened', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  const previous = process.umask(0o022);  // the usual umask, whatever the test runner's is
  try {
    let store = await openStore(db);
    t.equal(modeOf(db), 0o700, 'folder');
    t.equal(modeOf(path.join(db, 'data.mdb')), 0o600, 'data.mdb');
    t.equal(modeOf(path.join(db, 'lock.mdb')), 0o600, 'lock.mdb');
    t.equal(modeOf(path.join(db, DEFAULT_KEY_FILE)), 0o600, 'key file');
    await store.close();

    fs.chmodSync(db, 0o755);
    fs.chmodSync(path.join(db, 'data.mdb'), 0o644);
    fs.chmodSync(path.join(db, 'lock.mdb'), 0o666);
    store = await openStore(db);
    await store.close();
    t.same([modeOf(db), modeOf(path.join(db, 'data.mdb')), modeOf(path.join(db, 'lock.mdb'))], [0o700, 0o600, 0o600], 'tightened at start');
  } finally {
    process.umask(previous);
  }
});

/** A store as schema 2 wrote it: plain segments, plain images, a plain private key. */
async function writePlainSchema2(dir: string, n: number, pem: string): Promise<void> {
  const env = open({ path: dir, compression: false });
  const meta = env.openDB<unknown, string>({ name: 'meta' });
  const records = env.openDB<Record<string, unknown>, [string, string]>({ name: 'persons' });
  const images = env.openDB<Buffer, [string, string]>({ name: 'images', encoding: 'binary' });
  const segments = env.openDB<Buffer, [string, string, number]>({ name: 'templates', encoding: 'binary' });
  const withRoom = env.openDB<number, [string, string, number]>({ name: 'templates-with-room' });
  const keys = env.openDB<Record<string, unknown>, string>({ name: 'service-keys' });
  await env.transaction(() => {
    meta.put('schema', 2);
    for (const account of ['x', 'y']) {
      const entries = Array.from({ length: n }, (_, i) => ({ personId: `${account}${i}`, template: templateFor(i + (account === 'x' ? 0 : 5000), 0, 1) }));
      for (let s = 0, from = 0; from < entries.length; s++) {
        const { segment, taken } = withAppended(emptySegment(entries[0].template.length), entries, from);
        segments.put([MODEL, account, s], encodeSegment(segment));
        if (taken < 32) withRoom.put([MODEL, account, s], taken);
        for (let k = from; k < from + taken; k++) {
          const personId = entries[k].personId;
          records.put([account, personId], { personId, created: NOW, updated: NOW, modelId: MODEL, segment: s });
          images.put([account, personId], imageFor(k + (account === 'x' ? 0 : 5000)));
        }
        from += taken;
      }
    }
    keys.put('response-signing', { privateKey: pem, publicKey: 'PUBLIC', created: NOW });
  });
  await env.close();
}

t.test('a plain schema-2 store is sealed on first open, resumes after an interruption, reads back the same', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  const pem = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const N = 70;  // per account: 3 segments each
  await writePlainSchema2(db, N, pem);
  t.not(rawFile(db).indexOf(imageFor(3).subarray(4, 68)), -1, 'the plain store holds the image');

  // First attempt stops after 40 values: two batches of 16 are committed, the third is not.
  const env = open({ path: db, compression: false });
  const meta = env.openDB<unknown, string>({ name: 'meta' });
  const sealer = new DataKeySealer(await unlockDataKey(meta, path.join(db, DEFAULT_KEY_FILE), db, false));
  let sealedCount = 0;
  const interrupted: Sealer = {
    seal: (name, key, plain) => {
      if (++sealedCount > 40) throw new Error('power cut');
      return sealer.seal(name, key, plain);
    },
    open: (name, key, sealed) => sealer.open(name, key, sealed),
  };
  await t.rejects(sealPlainStore(env, meta, interrupted, new ServiceKeyRepository(env, sealer), 16), /power cut/);
  t.equal(meta.get('schema'), 2, 'still schema 2');
  t.ok(meta.get('sealing'), 'progress recorded');
  await env.close();

  const store = await openStore(db);
  t.teardown(() => store.close());
  for (const account of ['x', 'y']) {
    for (let i = 0; i < N; i++) {
      const seed = i + (account === 'x' ? 0 : 5000);
      const p = store.persons.get(account, `${account}${i}`);
      if (!sameTemplate(p?.template, templateFor(seed, 0, 1)) || !store.persons.referenceImage(account, `${account}${i}`)!.equals(imageFor(seed))) {
        t.fail(`${account}${i} does not read back`);
      }
    }
  }
  t.equal(store.persons.count(), 2 * N);
  t.equal((await store.serviceKeys.responseSigning()).privateKey, pem, 'the private key is kept');
  const galleries = new Galleries();
  t.teardown(() => galleries.close());
  t.same(await galleries.rebuild(store.persons, MODEL), { loaded: 2 * N, stale: 0 });
  await store.persons.create('x', 'new', { modelId: MODEL, template: templateFor(9999, 0, 1), referenceImage: imageFor(9999) }, NOW);
  t.equal(store.persons.count('x'), N + 1, 'a segment with room takes the next enrolment');
  await store.close();

  // LMDB only frees the pages of the plain values: after the migration the store was replaced by a
  // compacted copy, so the file holds none of them.
  const raw = rawFile(db);
  let found = 0;
  for (let i = 0; i < N; i++) {
    for (const seed of [i, i + 5000]) {
      if (raw.indexOf(imageFor(seed).subarray(4, 68)) >= 0 || raw.indexOf(bytesOf(templateFor(seed, 0, 1)).subarray(0, 64)) >= 0) found++;
    }
  }
  t.equal(found, 0, 'no plain image or template left in data.mdb, not even in freed pages');
  t.equal(raw.indexOf(Buffer.from(pem.split('\n')[1])), -1, 'nor the plain private key');
  const env3 = open({ path: db, compression: false, readOnly: true });
  const meta3 = env3.openDB<unknown, string>({ name: 'meta' });
  t.same([meta3.get('schema'), meta3.get('sealing'), meta3.get('compact-pending')], [4, undefined, undefined], 'schema 4, migration finished');
  await env3.close();
  t.same(fs.readdirSync(db).sort(), ['data.mdb', DEFAULT_KEY_FILE, 'lock.mdb'].sort(), 'no temporary files left');
  const reopened = await openStore(db);
  t.equal(reopened.persons.count(), 2 * N + 1, 'reopens without migrating again');
  await reopened.close();
});

t.test('with another process reading the store, the compaction waits for an open that has it alone', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const db = path.join(dir, 'db');
  await writePlainSchema2(db, 10, 'PEM');
  const reader = spawn(process.execPath, ['-e', `
    const { open } = require('lmdb');
    const env = open({ path: ${JSON.stringify(db)}, compression: false });
    env.openDB({ name: 'meta' }).get('schema');
    process.stdout.write('ready\\n');
    process.stdin.on('end', () => process.exit(0));
    process.stdin.resume();`], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => reader.kill());
  await new Promise((resolve) => reader.stdout.once('data', resolve));

  let store = await openStore(db);
  t.equal(store.persons.count(), 20, 'sealed and open');
  await store.close();
  const pending = () => {
    const env = open({ path: db, compression: false, readOnly: true });
    const value = env.openDB<unknown, string>({ name: 'meta' }).get('compact-pending');
    void env.close();
    return value;
  };
  t.equal(pending(), true, 'compaction pending: the file was not swapped under the other process');
  reader.stdin.end();
  await new Promise((resolve) => reader.once('exit', resolve));

  store = await openStore(db);
  t.ok(store.persons.referenceImage('x', 'x3')!.equals(imageFor(3)));
  await store.close();
  t.equal(pending(), undefined, 'compacted once alone');
  t.equal(rawFile(db).indexOf(imageFor(3).subarray(4, 68)), -1);
});
