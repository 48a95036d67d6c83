// The running device's licence against a fake licence server: the grants gate over HTTP (granted served,
// ungranted 403 naming the grant, 401 before 403), grants changes and revocations reaching the device at its
// next check (interval 1 s, no restart), the cloud going away (served until validUntil, then 403 with the
// reason), usage reported and dropped once a check succeeds (each count in the device's store before its
// answer is sent, a backlog sent in full reports one after the other, days past the bound dropped, a cloud
// older than the numbered report served the old way), maxPersons at enrolment.
import { once } from 'node:events';
import fs from 'node:fs';
import t, { type Test } from 'tap';
import type { CheckOutcome } from '../../src/licensing/device/licence-client';
import type { DeviceLicence } from '../../src/licensing/device/device-licence';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';
import { FakeLicenceServer } from '../helpers/fake-licence-server';
import { deviceLicence, licensedConfig, usageOnDisk, usageStoreFor } from '../helpers/licensed-device';

interface Device {
  server: FakeLicenceServer;
  licence: DeviceLicence;
  api: TestApp;
  lines: string[];
}

/** A device app gated by a started licence; `clock` (if given) rules documents and the device alike. */
async function licensedDevice(t: Test, setUp: (s: FakeLicenceServer) => void, clock?: () => Date): Promise<Device> {
  const dir = tempDir();
  const server = await FakeLicenceServer.start();
  if (clock) server.now = clock;
  setUp(server);
  const config = licensedConfig(dir, server);
  const lines: string[] = [];
  let api: TestApp | undefined;
  const licence = deviceLicence(config, { persons: () => api?.store.persons.count() ?? 0, now: clock, lines });
  await licence.start();
  api = await startTestApp({ dir, engine: new FakeEngine(), tune: (c) => Object.assign(c, { server: config.server, licence: config.licence }), deps: { licence } });
  t.teardown(async () => {
    await licence.close();
    await api!.close();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { server, licence, api, lines };
}

/**
 * The first check the device makes on its own timer with the outcome `kind`. A check already on its way when
 * the test changed the server may still bring the old answer, so up to three checks are awaited.
 */
async function checksUntil(licence: DeviceLicence, done: (o: CheckOutcome) => boolean): Promise<CheckOutcome> {
  let outcome: CheckOutcome | undefined;
  for (let i = 0; i < 3 && !(outcome && done(outcome)); i++) [outcome] = (await once(licence, 'check')) as [CheckOutcome];
  return outcome!;
}

function checkWith(licence: DeviceLicence, kind: CheckOutcome['kind']): Promise<CheckOutcome> {
  return checksUntil(licence, (o) => o.kind === kind);
}

t.test('grants gate: granted served, ungranted 403 naming the grant, no key 401 first', async (t) => {
  const { api, licence } = await licensedDevice(t, (s) => { s.licence.grants = ['create', 'get']; });
  const faceImage = await fakePhotoB64({ identity: 1 });
  t.equal((await api.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage } })).statusCode, 200, 'create is granted');
  t.equal((await api.call({ method: 'GET', url: '/person/face/p1' })).statusCode, 200, 'get is granted');
  const identify = await api.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage } });
  t.equal(identify.statusCode, 403);
  t.same(identify.json(), { code: 'FORBIDDEN', message: 'Forbidden: licence lic_test0001 does not grant "identify"' });
  const remove = await api.call({ method: 'DELETE', url: '/person/face/p1' });
  t.same([remove.statusCode, remove.json().message], [403, 'Forbidden: licence lic_test0001 does not grant "remove"']);
  const noKey = await api.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage }, key: null });
  t.same([noKey.statusCode, noKey.json().code], [401, 'UNAUTHORIZED'], 'no key: 401, not the licence 403');
  t.same(licence.status().grants, ['create', 'get']);
});

t.test('a grants change and then a revocation reach the running device at its next check', async (t) => {
  const { api, licence, server, lines } = await licensedDevice(t, (s) => {
    s.licence.grants = ['get'];
    s.licence.checkIntervalSeconds = 1;
  });
  const identify = () => api.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: 'AAAA' } });
  t.equal((await identify()).statusCode, 403, 'identify not granted yet');
  server.licence.grants = ['get', 'identify'];
  const changed = await checksUntil(licence, (o) => o.kind === 'ok' && o.document.grants.includes('identify'));
  t.same(changed.kind === 'ok' && changed.document.grants, ['get', 'identify']);
  t.not((await identify()).statusCode, 403, 'identify granted after the next check, no restart');

  server.respond = () => ({ status: 403, json: { code: 'LC_006', message: 'Licence revoked: revoked by the operator' } });
  t.equal((await checkWith(licence, 'refused')).kind, 'refused');
  const refused = await api.call({ method: 'GET', url: '/person/face/p1' });
  t.equal(refused.statusCode, 403, 'even granted operations are refused once revoked');
  t.match(refused.json().message, /^Forbidden: the licence server refused licence lic_test0001 at .*: Licence revoked: revoked by the operator \(LC_006\)$/);
  t.equal(licence.status().state, 'refused');
  t.match(lines.join('\n'), /refused the licence: Licence revoked/);
  // A refusal is not undone by a cloud that stops answering: only a successful check ends it.
  server.respond = () => ({ status: 503, text: 'down' });
  t.equal((await checkWith(licence, 'unreachable')).kind, 'unreachable');
  t.equal((await api.call({ method: 'GET', url: '/person/face/p1' })).statusCode, 403, 'still refused');
  server.respond = undefined;
  t.equal((await checkWith(licence, 'ok')).kind, 'ok');
  t.equal((await api.call({ method: 'GET', url: '/person/face/p1' })).statusCode, 404, 'served again once a check succeeds');
});

t.test('the cloud goes away: served on the document until its validUntil, then 403 saying since when', async (t) => {
  let now = Date.parse('2030-05-01T12:00:00.000Z');
  const clock = () => new Date(now);
  const { api, licence, server } = await licensedDevice(t, (s) => {
    s.licence.grants = ['get'];
    s.licence.checkIntervalSeconds = 1;
    s.licence.documentValidSeconds = 60;
  }, clock);
  const get = () => api.call({ method: 'GET', url: '/person/face/p1' });
  t.equal((await get()).statusCode, 404, 'served (NF_001) while the document is good');
  server.respond = () => ({ status: 503, text: 'down' });
  t.equal((await checkWith(licence, 'unreachable')).kind, 'unreachable');
  now += 59_000;
  t.equal((await get()).statusCode, 404, 'still served one second before validUntil');
  t.equal(licence.status().failingSince, '2030-05-01T12:00:00.000Z');
  now += 1_000;
  const lapsed = await get();
  t.equal(lapsed.statusCode, 403, 'refused at validUntil');
  t.equal(lapsed.json().message, 'Forbidden: licence lic_test0001 could not be checked with the licence server since ' +
    '2030-05-01T12:00:00.000Z (the licence server answered 503); its last document ran out at 2030-05-01T12:01:00.000Z');
  t.equal(licence.status().state, 'lapsed');

  server.respond = undefined;
  t.equal((await checkWith(licence, 'ok')).kind, 'ok', 'the cloud is back');
  t.equal((await get()).statusCode, 404, 'served again after a successful check');
});

t.test('usage: requests answered per day and grant go with the next check and are dropped once it succeeds', async (t) => {
  let now = Date.parse('2030-05-01T23:59:59.000Z');
  const { api, licence, server } = await licensedDevice(t, (s) => { s.licence.grants = ['create', 'get']; }, () => new Date(now));
  await api.call({ method: 'POST', url: '/person/face/p1', payload: { faceImage: await fakePhotoB64({ identity: 1 }) } });
  await api.call({ method: 'GET', url: '/person/face/p1' });
  now += 2000; // the next UTC day
  await api.call({ method: 'GET', url: '/person/face/p1' });
  await api.call({ method: 'GET', url: '/person/face/nobody' }); // 404 is an answer too
  await api.call({ method: 'DELETE', url: '/person/face/p1' }); // refused by the gate: not counted
  await api.call({ method: 'GET', url: '/person/face/p1', key: null }); // 401: not counted
  server.respond = () => ({ status: 500, json: { code: 'INTERNAL', message: 'x' } });
  t.equal((await licence.recheck()).kind, 'unreachable');
  server.respond = undefined;
  t.equal((await licence.recheck()).kind, 'ok');
  const expected = [
    { day: '2030-05-01', operation: 'create', requests: 1 },
    { day: '2030-05-01', operation: 'get', requests: 1 },
    { day: '2030-05-02', operation: 'get', requests: 2 },
  ];
  t.same(server.checks.at(-2)!.usage, expected, 'sent with the failed check');
  t.same(server.checks.at(-1)!.usage, expected, 'kept after the failure and sent again');
  t.equal(server.checks.at(-1)!.persons, 1, 'persons: the store\'s count');
  t.equal((await licence.recheck()).kind, 'ok');
  t.same(server.checks.at(-1)!.usage, [], 'dropped once a check succeeded');
});

t.test('a usage report the cloud does not believe (R_003) is dropped, not the licence', async (t) => {
  const { api, licence, server, lines } = await licensedDevice(t, (s) => { s.licence.grants = ['get']; });
  await api.call({ method: 'GET', url: '/person/face/p1' });
  // The cloud refuses reports with usage (as it does for days outside the licence's life) and accepts the rest.
  server.respond = (body, normal) => (body.usage.length > 0
    ? { status: 400, json: { code: 'R_003', message: 'Fields validation exception: usage[0].day: 1970-01-01 is outside the licence\'s life' } }
    : normal());
  const outcome = await licence.recheck();
  t.equal(outcome.kind, 'ok', 'checked again without the report');
  t.same(server.checks.at(-1)!.usage, [], 'the second check carried no usage');
  t.equal(server.checks.at(-2)!.usage.length, 1, 'the first carried the report');
  t.equal(licence.status().state, 'licensed');
  t.match(lines.join('\n'), /refused this device's usage report .*: it is dropped/);
  server.respond = undefined;
  t.equal((await licence.recheck()).kind, 'ok');
  t.same(server.checks.at(-1)!.usage, [], 'and not sent again');
});

t.test('each answered request is in the device\'s store before its answer arrives', async (t) => {
  const { api, licence, server } = await licensedDevice(t, (s) => { s.licence.grants = ['get']; });
  const stored = usageOnDisk(api.config);
  const day = new Date().toISOString().slice(0, 10);
  const onDisk = () => stored.pendingRows().filter((r) => r.operation === 'get').reduce((n, r) => n + r.requests, 0);
  for (let i = 1; i <= 3; i++) {
    t.equal((await api.call({ method: 'GET', url: '/person/face/nobody' })).statusCode, 404);
    t.equal(onDisk(), i, `answer ${i}: its count is committed already`);
  }
  const together = await Promise.all([1, 2, 3, 4].map(() => api.call({ method: 'GET', url: '/person/face/nobody' })));
  t.same(together.map((r) => r.statusCode), [404, 404, 404, 404]);
  t.equal(onDisk(), 7, 'concurrent answers too (one transaction for the turn)');
  const metrics = await api.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  t.match(metrics.body, /^face_check_licence_usage_unreported_requests 7$/m, 'the metrics show what waits for the cloud');
  t.equal((await licence.recheck()).kind, 'ok');
  t.same(server.checks.at(-1)!.usage, [{ day, operation: 'get', requests: 7 }]);
  t.match(server.checks.at(-1)!.usageReport, { number: 1 });
  t.same(stored.pendingRows(), [], 'moved into the report');
  t.equal(stored.inFlight(), undefined, 'and the report deleted once acknowledged');
  t.equal(licence.unreportedRequests(), 0);
});

t.test('a backlog larger than one check goes in full reports one second apart; days past the bound are dropped', async (t) => {
  const dir = tempDir();
  const server = await FakeLicenceServer.start();
  const config = licensedConfig(dir, server);
  const usage = usageStoreFor(config);
  const DAY = 86_400_000;
  const today = Date.now();
  const counts = new Map<string, number>();
  // 57 days of all 8 operations: 456 rows, one request each; and one day beyond the 400-day bound.
  for (let d = 0; d < 57; d++) {
    for (const op of ['live-face', 'create', 'update', 'remove', 'get', 'identify', 'verify', 'compare']) {
      counts.set(`${new Date(today - d * DAY).toISOString().slice(0, 10)} ${op}`, 1);
    }
  }
  const ancient = new Date(today - 401 * DAY).toISOString().slice(0, 10);
  counts.set(`${ancient} get`, 9);
  await usage.add(counts);
  const lines: string[] = [];
  const licence = deviceLicence(config, { usage, lines });
  t.teardown(async () => { await licence.close(); await server.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  await licence.start();
  await once(licence, 'check');
  t.equal(server.checks[0].usage.length, 400, 'the start-up check carried a full report');
  t.equal(server.checks[1].usage.length, 56, 'the rest followed at once, not an interval later');
  t.equal(server.checks[1].usageReport!.number, server.checks[0].usageReport!.number + 1);
  t.equal([...server.checks[0].usage, ...server.checks[1].usage].reduce((n, r) => n + r.requests, 0), 456, 'every request once');
  t.notOk(server.checks.some((c) => c.usage.some((r) => r.day === ancient)), 'the day past the bound was not sent');
  t.match(lines.join('\n'), new RegExp(`usage older than 400 days .*: 9 request\\(s\\) of ${ancient} to ${ancient} dropped`));
  t.ok(usage.isEmpty(), 'nothing left on the device');
});

t.test('at a stop, unacknowledged usage goes with one last check if the cloud answers in time; else it waits in the store', async (t) => {
  const dir = tempDir();
  const server = await FakeLicenceServer.start();
  t.teardown(async () => { await server.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const config = licensedConfig(dir, server);
  const usage = usageStoreFor(config);
  const lines: string[] = [];
  const first = deviceLicence(config, { usage, lines });
  await first.start();
  await first.record('get');
  await first.record('get');
  server.respond = () => 'hang';
  const began = Date.now();
  await first.close({ reportWithinMs: 300 });
  t.ok(Date.now() - began < 5_000, 'the stop is not held past its bound by a cloud that does not answer');
  t.match(lines.join('\n'), /usage could not be reported at stop .*: it is kept in the store for the next start/);
  t.equal(usage.inFlight()?.usage[0].requests, 2, 'the report waits in the store');

  server.respond = undefined;
  const second = deviceLicence(config, { usage, lines });
  await second.start();
  t.same(server.checks.at(-1)!.usageReport, server.checks.at(-2)!.usageReport, 'the next start sends the same report');
  t.ok(usage.isEmpty(), 'and deletes it once acknowledged');
  await second.record('identify');
  await second.close({ reportWithinMs: 5_000 });
  t.same(server.checks.at(-1)!.usage.map((r) => [r.operation, r.requests]), [['identify', 1]], 'a cloud that answers takes it at the stop');
  t.match(lines.join('\n'), /usage reported to the licence server at stop/);
  t.ok(usage.isEmpty());
});

t.test('a cloud older than the numbered report: the same rows go without it and are deleted once checked', async (t) => {
  const { api, licence, server } = await licensedDevice(t, (s) => { s.licence.grants = ['get']; });
  await api.call({ method: 'GET', url: '/person/face/p1' });
  // As the old cloud's schema refuses an unknown field.
  server.respond = (body, normal) => (body.usageReport
    ? { status: 400, json: { code: 'R_003', message: 'Fields validation exception: body must NOT have additional properties (usageReport)' } }
    : normal());
  t.equal((await licence.recheck()).kind, 'ok');
  t.ok(server.checks.at(-2)!.usageReport, 'tried with the report number first');
  t.same([server.checks.at(-1)!.usageReport, server.checks.at(-1)!.usage.length], [undefined, 1], 'then the same rows without it');
  t.equal((await licence.recheck()).kind, 'ok');
  t.same(server.checks.at(-1)!.usage, [], 'deleted once that check succeeded');
});

t.test('maxPersons: enrolment stops at the limit, counting every account of the device', async (t) => {
  const { api } = await licensedDevice(t, (s) => { s.licence.maxPersons = 2; });
  const enrol = (id: string, identity: number, key?: string) =>
    fakePhotoB64({ identity }).then((faceImage) => api.call({ method: 'POST', url: `/person/face/${id}`, payload: { faceImage }, key }));
  t.equal((await enrol('p1', 1)).statusCode, 200);
  const { key: other } = await api.store.apiKeys.create('other-account', 'full', 'second account', new Date().toISOString());
  t.equal((await enrol('q1', 2, other)).statusCode, 200, 'the second account\'s first person');
  const third = await enrol('p2', 3);
  t.equal(third.statusCode, 403);
  t.same(third.json(), { code: 'FORBIDDEN', message: 'Forbidden: licence allows at most 2 enrolled persons' });
  t.equal((await enrol('q2', 4, other)).statusCode, 403, 'the limit is the device\'s, not the account\'s');
  t.equal((await api.call({ method: 'DELETE', url: '/person/face/p1' })).statusCode, 200);
  t.equal((await enrol('p2', 3)).statusCode, 200, 'room again after a removal');
});

t.test('maxPersons holds when several accounts enrol at once', async (t) => {
  // Analyses finish out of order, so every create reaches the limit check while others are in flight.
  const dir = tempDir();
  const server = await FakeLicenceServer.start();
  server.licence.maxPersons = 3;
  const config = licensedConfig(dir, server);
  let api: TestApp | undefined;
  const licence = deviceLicence(config, { persons: () => api?.store.persons.count() ?? 0, lines: [] });
  await licence.start();
  const engine = new FakeEngine();
  engine.jitterMs = 20;
  api = await startTestApp({ dir, engine, tune: (c) => Object.assign(c, { server: config.server, licence: config.licence }), deps: { licence } });
  t.teardown(async () => { await api!.close(); licence.close(); await server.close(); });
  const keys = await Promise.all(['a1', 'a2', 'a3', 'a4'].map(async (account) =>
    (await api!.store.apiKeys.create(account, 'full', account, new Date().toISOString())).key));
  const statuses = await Promise.all(keys.flatMap((key, k) => [0, 1].map(async (i) => {
    const faceImage = await fakePhotoB64({ identity: 10 + k * 2 + i });
    return (await api!.call({ method: 'POST', url: `/person/face/p${i}`, payload: { faceImage }, key })).statusCode;
  })));
  t.equal(statuses.filter((s) => s === 200).length, 3, `exactly the limit enrolled (${statuses.join(',')})`);
  t.equal(api.store.persons.count(), 3);
});
