// face-check licence create|list|revoke|release|install-command|activation-code: the administrator's licence
// commands on a cloud store (the command line needs no activation code and is not held to the plan's count).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { main } from '../../src/cli/main';
import { loadConfig } from '../../src/config/load';
import { ActivationCodes, activationCodeSha256, normaliseActivationCode } from '../../src/licensing/cloud/activation-codes';
import { publicKeySha256 } from '../../src/licensing/licence-document';
import { LicenceServer } from '../../src/licensing/cloud/licence-server';
import { openStore, type Store } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { writeTinyTarball } from '../helpers/tiny-package';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';

const SERVER_URL = 'https://licences.example.com';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

function setUp(t: Test) {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tarball = writeTinyTarball(dir);
  const ini = path.join(dir, 'cloud.ini');
  fs.writeFileSync(ini, ['[server]', 'mode = cloud', 'port = 0', '[storage]', 'path = ./db', '[camera]', 'source = none',
    '[plans]', 'free_max_licences = 1', '[licensing]', `public_url = ${SERVER_URL}`, `package_file = ${tarball}`].join('\n'));
  const config = loadConfig(ini);
  const run = async (...argv: string[]) => {
    const c = capture();
    const code = await main([...argv, '--config', ini], c.io);
    return { code, out: c.out, err: c.err };
  };
  /** Runs `fn` on the store while no command has it open. */
  const withStore = async <T>(fn: (store: Store) => Promise<T>): Promise<T> => {
    const store = await openStore(config.storage.path);
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  const addAccount = (accountId: string, plan: 'free' | 'paid') => withStore(async (store) => {
    const at = new Date().toISOString();
    await store.accounts.create({ accountId, email: `${accountId}@example.com`, passwordHash: 'unused', role: 'operator', plan, created: at, updated: at });
  });
  return { dir, ini, config, tarball, run, withStore, addAccount };
}

t.test('licence create | list | install-command | release | revoke', async (t) => {
  const s = setUp(t);
  await s.addAccount('acme', 'free');
  await s.addAccount('globex', 'paid');

  const created = await s.run('licence', 'create', '--account', 'acme', '--grants', 'verify,identify', '--label', 'gate 1', '--max-persons', '50');
  t.equal(created.code, 0, created.err.join('\n'));
  const id = /created licence (lic_[0-9a-f]{16}) \(account acme, grants identify,verify\)/.exec(created.out[0])?.[1];
  t.ok(id, created.out[0]);
  const key = /^licence key: (fcl_[A-Za-z0-9_-]{32})$/.exec(created.out[1])?.[1];
  t.ok(key, 'the licence key is printed');
  const command = created.out[3];
  const packageSha = crypto.createHash('sha256').update(fs.readFileSync(s.tarball)).digest('hex');
  const publicKey = await s.withStore(async (store) => (await store.serviceKeys.responseSigning()).publicKey);
  t.ok(command.includes(key!) && command.includes(packageSha) && command.includes(publicKeySha256(publicKey)) && command.includes(SERVER_URL),
    'the installation command names the key, the package hash, the pinned key and the cloud');

  // The command line is not held to the free plan's one licence, nor asked for a code.
  const second = await s.run('licence', 'create', '--account', 'acme', '--grants', '');
  t.equal(second.code, 0, 'a second licence on the free plan');
  const other = await s.run('licence', 'create', '--account', 'globex', '--grants', 'compare', '--expires', '2099-01-01');
  t.equal(other.code, 0);

  const listed = await s.run('licence', 'list');
  t.equal(listed.out[0], 'licenceId\taccount\tstatus\tgrants\tdevice\tlastCheck\tusageToday\texpires\tlabel');
  t.equal(listed.out.length, 4);
  t.equal(listed.out[1], `${id}\tacme\tactive\tidentify,verify\t-\t-\t0\t-\tgate 1`);
  t.match(listed.out[3], /\tglobex\tactive\tcompare\t-\t-\t0\t2099-01-01T00:00:00.000Z\t$/);
  t.notMatch(listed.out.join('\n'), key!, 'lists never show keys');
  t.equal((await s.run('licence', 'list', '--account', 'globex')).out.length, 2, '--account filters');

  // A device checks in: the list shows its fingerprint's start, the check and today's usage.
  const fingerprint = crypto.createHash('sha256').update('board').digest('hex');
  const today = new Date().toISOString().slice(0, 10);
  await s.withStore(async (store) => {
    await new LicenceServer({ config: s.config, store: lmdbAsyncStore(store), errors: testErrorCatalog(), now: () => new Date() }).check({
      licenceKey: key, fingerprint, nonce: crypto.randomBytes(16).toString('base64url'), version: '0.1.0', persons: 2,
      usage: [{ day: today, operation: 'identify', requests: 3 }, { day: today, operation: 'verify', requests: 1 }],
    }, '192.0.2.7');
  });
  const bound = (await s.run('licence', 'list', '--account', 'acme')).out[1].split('\t');
  t.same([bound[4], bound[6]], [fingerprint.slice(0, 12), 'identify=3,verify=1']);
  t.match(bound[5], /^\d{4}-\d{2}-\d{2}T/);

  const again = await s.run('licence', 'install-command', id!);
  t.same([again.code, again.out], [0, [command]], 'the same command again, from the sealed key');
  // The camera and port of the device (the README's example: 8080 is the default, so only the camera is added).
  const picked = await s.run('licence', 'install-command', id!, '--camera', 'openni2', '--port', '8080');
  t.same([picked.code, picked.out], [0, [command.replace(/'$/, ' --camera openni2\'')]], 'the camera picked');
  const otherPort = await s.run('licence', 'install-command', id!, '--camera', 'none', '--port', '9090');
  t.same(otherPort.out, [command.replace(/'$/, ' --camera none --port 9090\'')], 'and another port');
  for (const bad of [['--camera', 'replay'], ['--port', '0'], ['--port', '8o80']]) {
    const refused = await s.run('licence', 'install-command', id!, ...bad);
    t.same([refused.code, refused.out], [2, []], `${bad.join(' ')} is refused`);
    t.match(refused.err.join('\n'), /install-command: The (camera|port) is/, 'saying what is allowed');
  }

  // Step 3 from the command line: the grants (and the other settings) of a licence line.
  const updated = await s.run('licence', 'update', id!, '--grants', 'get,identify', '--max-persons', 'none');
  t.equal(updated.code, 0, updated.err.join('\n'));
  t.match(updated.out[0], new RegExp(`^updated ${id}: grants get,identify, most persons no limit, expires never`));
  t.equal((await s.run('licence', 'list', '--account', 'acme')).out[1].split('\t')[3], 'get,identify', 'the list shows the new grants');
  const badUpdate = await s.run('licence', 'update', id!, '--grants', 'fly');
  t.same([badUpdate.code, badUpdate.err[0]?.includes('unknown grant "fly"')], [1, true], 'an unknown grant changes nothing');
  t.equal((await s.run('licence', 'update', id!)).code, 2, 'update needs something to change');

  t.equal((await s.run('licence', 'release', id!)).code, 0);
  t.equal((await s.run('licence', 'list', '--account', 'acme')).out[1].split('\t')[4], '-', 'released');
  const revoked = await s.run('licence', 'revoke', id!);
  t.match(revoked.out[0], new RegExp(`^revoked ${id} \\(account acme\\)`));
  t.equal((await s.run('licence', 'list', '--account', 'acme')).out[1].split('\t')[2], 'revoked');
});

t.test('licence commands refuse what they cannot do, saying why', async (t) => {
  const s = setUp(t);
  await s.addAccount('acme', 'paid');
  const noAccount = await s.run('licence', 'create', '--grants', 'identify');
  t.equal(noAccount.code, 2);
  t.match(noAccount.err[0], /--account/);
  const noGrants = await s.run('licence', 'create', '--account', 'acme');
  t.equal(noGrants.code, 2);
  const badGrant = await s.run('licence', 'create', '--account', 'acme', '--grants', 'identify,fly');
  t.equal(badGrant.code, 1);
  t.match(badGrant.err[0], /R_003: Fields validation exception: grants: unknown grant "fly"/);
  const unknownAccount = await s.run('licence', 'create', '--account', 'nobody', '--grants', 'identify');
  t.equal(unknownAccount.code, 1);
  t.match(unknownAccount.err[0], /no account "nobody"/);
  const badNumber = await s.run('licence', 'create', '--account', 'acme', '--grants', 'identify', '--max-persons', 'many');
  t.equal(badNumber.code, 2);
  const past = await s.run('licence', 'create', '--account', 'acme', '--grants', 'identify', '--expires', '2001-01-01');
  t.equal(past.code, 1);
  t.match(past.err[0], /not in the future/);
  const missing = await s.run('licence', 'revoke', 'lic_0000000000000000');
  t.equal(missing.code, 1);
  t.match(missing.err[0], /LC_004/);
  t.equal((await s.run('licence', 'revoke')).code, 2, 'needs an id');
  t.equal((await s.run('licence', 'frobnicate')).code, 2);
  t.equal((await s.run('licence', 'list')).out.length, 1, 'nothing was created');
});

t.test('licence activation-code prints a code once; only its hash is stored', async (t) => {
  const s = setUp(t);
  const issued = await s.run('licence', 'activation-code', '--plan', 'paid', '--valid-days', '5');
  t.equal(issued.code, 0, issued.err.join('\n'));
  const code = issued.out[1];
  t.match(code, /^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
  t.match(issued.out[0], /for the paid plan, valid until \S+, usable once/);
  const record = await s.withStore(async (store) => store.activationCodes.list());
  t.equal(record.length, 1);
  t.equal(record[0].plan, 'paid');
  t.equal(record[0].codeId, activationCodeSha256(normaliseActivationCode(code)!).slice(0, 8));
  const days = (Date.parse(record[0].expires) - Date.parse(record[0].created)) / 86_400_000;
  t.equal(days, 5, '--valid-days');
  t.equal(fs.readFileSync(path.join(s.config.storage.path, 'data.mdb')).indexOf(code.replace(/-/g, '')), -1, 'the code is not in the data file');
  t.equal(fs.readFileSync(path.join(s.config.storage.path, 'data.mdb')).indexOf(code), -1);

  const byDefault = await s.run('licence', 'activation-code', '--plan', 'free');
  t.equal(byDefault.code, 0);
  const all = await s.withStore(async (store) => store.activationCodes.list());
  const free = all.find((c) => c.plan === 'free')!;
  t.equal((Date.parse(free.expires) - Date.parse(free.created)) / 86_400_000, 30, '30 days by default');
  t.not(byDefault.out[1], code, 'a fresh code each time');

  t.equal((await s.run('licence', 'activation-code', '--plan', 'gold')).code, 2);
  t.equal((await s.run('licence', 'activation-code', '--plan', 'free', '--valid-days', '0')).code, 2);
  // The codes work: both are found unused by their hash.
  await s.withStore(async (store) => {
    t.equal(store.activationCodes.checkWithin(activationCodeSha256(normaliseActivationCode(code)!), 'paid', new Date()).outcome, 'ok');
    t.equal((await new ActivationCodes(store.activationCodes).list()).length, 2);
  });
});

t.test('licence device-key create | list | revoke: keys printed once, only their hashes stored and sent', async (t) => {
  const s = setUp(t);
  await s.addAccount('acme', 'paid');
  const created = await s.run('licence', 'create', '--account', 'acme', '--grants', 'identify');
  const id = /created licence (lic_[0-9a-f]{16})/.exec(created.out[0])![1];
  const licenceKey = /^licence key: (\S+)$/.exec(created.out[1])![1];

  const made = await s.run('licence', 'device-key', 'create', id, '--role', 'match', '--label', 'gate app');
  t.equal(made.code, 0, made.err.join('\n'));
  const keyId = new RegExp(`^created device key ([0-9a-f]{12}) on licence ${id} \\(role match\\)$`).exec(made.out[0])?.[1];
  t.ok(keyId, made.out[0]);
  const key = /^Api-Key: (fcd_[A-Za-z0-9_-]{32})$/.exec(made.out[1])?.[1];
  t.ok(key, 'the key is printed');
  t.same(made.out.slice(2), ['the key is shown only this once', 'the licence\'s device accepts it from its next licence check']);
  const signing = await s.run('licence', 'device-key', 'create', id, '--signing');
  t.equal(signing.code, 0);
  t.match(signing.out.join('\n'), /role full, signs its requests\)[\s\S]*-----BEGIN PRIVATE KEY-----/, 'full by default; the signing key printed once');
  const pem = path.join(s.dir, 'client.pem');
  fs.writeFileSync(pem, crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }));
  const own = await s.run('licence', 'device-key', 'create', id, '--role', 'enrol', '--public-key', pem);
  t.equal(own.code, 0, own.err.join('\n'));
  t.notMatch(own.out.join('\n'), /PRIVATE KEY/, 'nothing private for the client\'s own public key');

  const listed = await s.run('licence', 'device-key', 'list', id);
  t.equal(listed.out[0], 'keyId\trole\tcreated\trevoked\tsigning\tlabel');
  t.equal(listed.out.length, 4);
  t.match(listed.out[1], new RegExp(`^${keyId}\\tmatch\\t\\S+\\t-\\tno\\tgate app$`));
  t.match(listed.out[2], /\tfull\t\S+\t-\tyes\t$/);
  t.notMatch(listed.out.join('\n'), /fcd_/, 'lists never show keys');

  // The licence check's document carries the hash; the store never the key.
  const document = await s.withStore(async (store) => {
    const signed = await new LicenceServer({ config: s.config, store: lmdbAsyncStore(store), errors: testErrorCatalog(), now: () => new Date() }).check({
      licenceKey, fingerprint: 'cd'.repeat(32), nonce: crypto.randomBytes(16).toString('base64url'), version: '0.1.0', persons: 0, usage: [],
    }, '192.0.2.7');
    return Buffer.from(signed.document, 'base64').toString('utf8');
  });
  t.ok(document.includes(crypto.createHash('sha256').update(key!).digest('hex')), 'the document names the key\'s hash');
  t.notOk(document.includes(key!), 'not the key');
  t.equal(fs.readFileSync(path.join(s.config.storage.path, 'data.mdb')).indexOf(key!), -1, 'the key is not in the data file');

  const revoked = await s.run('licence', 'device-key', 'revoke', id, keyId!);
  t.same([revoked.code, revoked.out[0]], [0, `revoked device key ${keyId} of licence ${id}: its device refuses it from its next licence check`]);
  t.match((await s.run('licence', 'device-key', 'list', id)).out[1], new RegExp(`^${keyId}\\tmatch\\t\\S+\\t\\d{4}-\\d{2}-\\d{2}T`), 'listed as revoked');

  // Refusals.
  t.equal((await s.run('licence', 'device-key', 'create', id, '--role', 'root')).code, 2, 'an unknown role');
  t.equal((await s.run('licence', 'device-key', 'create')).code, 2, 'needs a licence id');
  t.equal((await s.run('licence', 'device-key', 'revoke', id)).code, 2, 'needs a key id');
  t.equal((await s.run('licence', 'device-key', 'rotate', id)).code, 2, 'an unknown action');
  const missing = await s.run('licence', 'device-key', 'list', 'lic_0000000000000000');
  t.same([missing.code, /LC_004/.test(missing.err[0])], [1, true]);
  const unknownKey = await s.run('licence', 'device-key', 'revoke', id, '000000000000');
  t.same([unknownKey.code, /has no device key 000000000000/.test(unknownKey.err[0])], [1, true]);
  t.equal((await s.run('licence', 'device-key', 'create', id, '--signing', '--public-key', pem)).code, 2, '--signing or --public-key');
});
