// The licence server's numbered usage reports on both cloud backends (LMDB, PostgreSQL): a report is added
// once however often it is sent (the device resending after a lost answer, or three copies at once), a
// later number is added, an earlier one is not, a new series (a device whose store was replaced) and another
// device after a release start afresh, a device without the field is added at every check as before, and
// a malformed usageReport is R_003.
import crypto from 'node:crypto';
import path from 'node:path';
import t from 'tap';
import { BACKENDS, backendSkipReason, startBackendApp, type BackendApp } from '../helpers/backends';
import { writeTinyTarball } from '../helpers/tiny-package';

const CHECK = '/licence/v1/check';
const fingerprint = (device: number) => crypto.createHash('sha256').update(`board ${device}`).digest('hex');
const series = (n: number) => crypto.createHash('sha256').update(`series ${n}`).digest('base64url').slice(0, 22);

for (const backend of BACKENDS) {
  t.test(`${backend}: a numbered report is added once, whatever is resent`, { skip: backendSkipReason(backend) }, async (t) => {
    const now = new Date('2030-05-06T07:08:09.000Z');
    const app: BackendApp = await startBackendApp(backend, {
      tune: (c) => {
        c.server.mode = 'cloud';
        c.licensing.public_url = 'https://cloud.example.com';
        c.licensing.package_file = writeTinyTarball(path.dirname(c.storage.path));
      },
      deps: { now: () => now },
    });
    t.teardown(() => app.close());
    const at = now.toISOString();
    await app.store.accounts.create({ accountId: 'acme', email: 'ops@acme.example', passwordHash: 'unused', role: 'operator', plan: 'paid', created: at, updated: at });
    const licence = await app.app.licences.create('acme', { label: 'gate', grants: ['identify', 'get'] }, { byAdministrator: true });
    const check = async (device: number, requests: number, usageReport?: unknown) => {
      const res = await app.call({
        method: 'POST', url: CHECK, key: null, payload: {
          licenceKey: licence.licenceKey, fingerprint: fingerprint(device), nonce: crypto.randomBytes(18).toString('base64url'),
          version: '0.1.0', persons: 0, usage: [{ day: '2030-05-06', operation: 'identify', requests }],
          ...(usageReport === undefined ? {} : { usageReport }),
        },
      });
      return { status: res.statusCode, body: res.json() };
    };
    const total = async () => (await app.store.licenceUsage.day(licence.licenceId, '2030-05-06')).identify ?? 0;

    t.equal((await check(1, 10, { series: series(1), number: 1 })).status, 200);
    t.equal(await total(), 10, 'report 1 added');
    t.equal((await check(1, 10, { series: series(1), number: 1 })).status, 200, 'the same report again (its answer was lost) is acknowledged');
    t.equal(await total(), 10, '... and not added again');

    const three = await Promise.all([1, 2, 3].map(() => check(1, 7, { series: series(1), number: 2 })));
    t.same(three.map((r) => r.status), [200, 200, 200], 'three copies of report 2 at once are all acknowledged');
    t.equal(await total(), 17, '... and added once');
    t.equal((await check(1, 5, { series: series(1), number: 1 })).status, 200);
    t.equal(await total(), 17, 'an earlier number is not added');

    t.equal((await check(1, 3, { series: series(2), number: 1 })).status, 200);
    t.equal(await total(), 20, 'a new series (the device\'s store replaced) starts afresh');

    t.equal((await check(1, 1)).status, 200);
    t.equal((await check(1, 1)).status, 200);
    t.equal(await total(), 22, 'without usageReport (an older device) the rows are added at every check, as before');

    await app.app.licences.release({ accountId: 'acme' }, licence.licenceId);
    t.equal((await check(2, 4, { series: series(2), number: 1 })).status, 200);
    t.equal(await total(), 26, 'another device after a release: its report 1 is its own');

    for (const [bad, why] of [
      [{ series: series(2), number: 0 }, /usageReport/],
      [{ series: 'short', number: 2 }, /usageReport/],
      [{ series: series(2), number: 2, extra: 1 }, /usageReport/],
      [{ series: series(2) }, /usageReport|number/],
    ] as const) {
      const res = await check(2, 100, bad);
      t.same([res.status, res.body.code], [400, 'R_003'], JSON.stringify(bad));
      t.match(res.body.message, why);
    }
    t.equal(await total(), 26, 'a refused body adds nothing');
  });
}
