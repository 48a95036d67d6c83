// A device's start-up under its licence (in process, fake engine): the licensed start through startService,
// a refused start that leaves nothing open and makes no first key, the development device (UNLICENSED line,
// everything allowed), a device with neither refused; and the offline grace on the stored document: used
// within the grace, refused past it, with grace 0, tampered or for another board, and never for a refusal.
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ConfigError, defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import { LicenceStartError } from '../../src/licensing/device/device-licence';
import { UNLICENSED_LINE } from '../../src/licensing/device/device-licence-setup';
import { STORED_DOCUMENT_FILE } from '../../src/licensing/device/stored-licence';
import { startService } from '../../src/start/start-service';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { testErrorCatalog } from '../helpers/errors';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';
import { FakeLicenceServer } from '../helpers/fake-licence-server';
import { deviceLicence, licensedConfig } from '../helpers/licensed-device';

async function setUp(t: Test): Promise<{ dir: string; server: FakeLicenceServer; config: Config }> {
  const dir = tempDir();
  const server = await FakeLicenceServer.start();
  t.teardown(async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir, server, config: licensedConfig(dir, server) };
}

function serve(config: Config, printed: string[]) {
  return startService(config, { engine: new FakeEngine(), errors: testErrorCatalog(), logger: false, print: (l) => printed.push(l) });
}

async function post(base: string, url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method: 'POST', headers: { 'api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

t.test('startService: a licensed device serves its grants; a refused one does not start and leaves nothing open', async (t) => {
  const { server, config } = await setUp(t);
  server.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: revoked by the operator' } });
  const printed: string[] = [];
  const refused = await serve(config, printed).catch((err: unknown) => err);
  t.ok(refused instanceof LicenceStartError);
  t.match(refused, { kind: 'refused', message: 'Licence revoked: revoked by the operator (LC_006)' });
  t.notMatch(printed.join('\n'), /Api-Key/, 'no first key is made for a device that may not serve');

  server.respond = undefined;
  server.licence.grants = ['create'];
  const service = await serve(config, printed); // the store lock and the store were released
  t.teardown(() => service.close());
  const faceImage = await fakePhotoB64({ identity: 1 });
  t.equal((await post(service.address, '/person/face/p1', { faceImage })).status, 200);
  const identify = await post(service.address, '/person/recognize-face', { faceImage });
  t.same(identify, { status: 403, body: { code: 'FORBIDDEN', message: 'Forbidden: licence lic_test0001 does not grant "identify"' } });
  t.match(printed.join('\n'), /licence lic_test0001 checked with http:\/\/127\.0\.0\.1:\d+: grants create/);
});

t.test('development device: one UNLICENSED line, every operation allowed; neither licence nor development: no start', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  Object.assign(config.server, { mode: 'device', port: 0 });
  config.storage.path = path.join(dir, 'db');
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  const printed: string[] = [];
  await t.rejects(serve(config, printed), ConfigError);
  await t.rejects(serve(config, printed), /\[licence\] key: device mode needs a licence/);
  t.notOk(fs.existsSync(config.storage.path), 'a refused configuration creates no store folder');

  config.licence.development = true;
  const service = await serve(config, printed);
  t.teardown(() => service.close());
  t.equal(printed.filter((l) => l === UNLICENSED_LINE).length, 1, printed.join('\n'));
  t.equal(UNLICENSED_LINE, 'face-check: UNLICENSED development device: every operation is allowed; ' +
    'a production device needs [licence] server_url, key and public_key_file');
  const identify = await post(service.address, '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: 2 }) });
  t.same(identify.body.code, 'RF_001', 'identify is served (no match), not refused');
});

t.test('the last verified document is kept 0600 beside the store after each successful check', async (t) => {
  const { config } = await setUp(t);
  const licence = deviceLicence(config);
  await licence.start();
  await licence.close();
  const file = path.join(config.storage.path, STORED_DOCUMENT_FILE);
  t.equal(fs.statSync(file).mode & 0o777, 0o600);
  t.same(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8'))).sort(), ['algorithm', 'document', 'signature']);
});

t.test('offline grace at start: the stored document within the grace; refused past it, with 0, tampered, elsewhere', async (t) => {
  const { dir, server, config } = await setUp(t);
  let now = Date.parse('2030-05-01T12:00:00.000Z');
  const clock = () => new Date(now);
  server.now = clock;
  server.licence.grants = ['get'];
  const first = deviceLicence(config, { now: clock });
  await first.start();
  await first.close();
  const stored = path.join(config.storage.path, STORED_DOCUMENT_FILE);
  const good = fs.readFileSync(stored, 'utf8');
  await server.close(); // the cloud is unreachable from here on

  const startOffline = async (graceHours: number, machineId?: string) => {
    const other = path.join(dir, 'other-board');
    if (machineId) fs.mkdirSync(other, { recursive: true });
    const c = machineId ? licensedConfig(other, server, machineId) : config;
    c.storage.path = config.storage.path;
    c.licence.offline_grace_hours = graceHours;
    const lines: string[] = [];
    const licence = deviceLicence(c, { now: clock, lines });
    t.teardown(() => licence.close());
    const error = await licence.start().then(() => undefined, (err: unknown) => err);
    return { licence, lines, error: error as LicenceStartError | undefined };
  };

  now += 30 * 60_000;
  const within = await startOffline(1);
  t.equal(within.error, undefined, 'started on the stored document half an hour after it was issued');
  t.match(within.licence.status(), { source: 'stored', state: 'licensed', grants: ['get'], servesUntil: '2030-05-01T13:00:00.000Z' });
  t.ok(within.licence.allows('get').ok);
  t.match(within.lines.join('\n'), /cannot be reached: ECONNREFUSED.*OFFLINE START on the stored licence document of 2030-05-01T12:00:00.000Z/);
  now += 31 * 60_000;
  t.match(within.licence.allows('get'), { ok: false, reason: /could not be checked with the licence server since 2030-05-01T12:30:00.000Z/ },
    'an offline start serves no longer than the grace after the document was issued');

  const past = await startOffline(1);
  t.match(past.error, { kind: 'unreachable', message: /cannot be reached: .*issued at 2030-05-01T12:00:00.000Z, more than offline_grace_hours \(1\) ago/ });
  const none = await startOffline(0);
  t.match(none.error, { kind: 'unreachable' });
  t.notMatch(none.error!.message, /stored/, 'grace 0: the stored document is not even looked at');

  now = Date.parse('2030-05-01T12:10:00.000Z');
  const elsewhere = await startOffline(1, 'another board');
  t.match(elsewhere.error, { kind: 'unreachable', message: /stored licence document is refused: .*bound to another device/ });
  const signed = JSON.parse(good) as { document: string };
  const bytes = Buffer.from(signed.document, 'base64');
  bytes[bytes.indexOf('"get"') + 1] = 'p'.charCodeAt(0); // "get" -> "pet": one byte, the grants changed
  fs.writeFileSync(stored, JSON.stringify({ ...signed, document: bytes.toString('base64') }));
  const tampered = await startOffline(1);
  t.match(tampered.error, { kind: 'unreachable', message: /stored licence document is refused: .*signature does not verify/ });
});

t.test('the offline grace covers an unreachable cloud only: a refusal at start is final', async (t) => {
  const { server, config } = await setUp(t);
  config.licence.offline_grace_hours = 24;
  const first = deviceLicence(config);
  await first.start();
  await first.close();
  server.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: gone' } });
  await t.rejects(deviceLicence(config).start(), { kind: 'refused', message: 'Licence revoked: gone (LC_006)' });
  server.respond = () => ({ status: 200, json: server.issued[0] });
  await t.rejects(deviceLicence(config).start(), { kind: 'invalid', message: /nonce differs/ }, 'a replay is not an outage');
});
