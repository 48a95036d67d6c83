// A licence key holder cannot forge usage: rows outside the licence's life (its creation to now, a day's
// clock allowance either side), a second row for one day and operation, or more requests than a device can
// answer in the part of that day inside the licence's life are refused (R_003, nothing counted); a day's
// counter stops at what a device can answer in a day however often it is reported, so totals stay exact
// integers. On both storage backends.
import crypto from 'node:crypto';
import path from 'node:path';
import t from 'tap';
import { implausibleUsage, USAGE_CLOCK_ALLOWANCE_MS } from '../../src/licensing/cloud/usage-bounds';
import { MAX_DAY_REQUESTS } from '../../src/storage/records';
import { BACKENDS, backendSkipReason, startBackendApp } from '../helpers/backends';
import { writeTinyTarball } from '../helpers/tiny-package';

const CREATED = new Date('2030-05-06T07:08:09.000Z');

t.test('the bounds as a rule', async (t) => {
  const row = (day: string, requests = 1) => ({ day, operation: 'identify' as const, requests });
  const now = new Date('2030-05-10T12:00:00.000Z');
  const created = CREATED.toISOString();
  t.equal(implausibleUsage([row('2030-05-05'), row('2030-05-11')], created, now), undefined, 'a day either side of the life');
  t.match(implausibleUsage([row('2030-05-04')], created, now), /2030-05-04 is outside the licence's life/);
  t.match(implausibleUsage([row('2030-05-12')], created, now), /2030-05-12 is outside/);
  t.match(implausibleUsage([row('1970-01-01')], created, now), /outside/);
  t.match(implausibleUsage([row('9999-12-31')], created, now), /outside/);
  // 2030-05-05 from 07:08:09 (creation less a day) to midnight: 60,711 s.
  t.equal(implausibleUsage([row('2030-05-05', 60_711_000)], created, now), undefined);
  t.match(implausibleUsage([row('2030-05-05', 60_711_001)], created, now), /more than a device can answer on 2030-05-05 \(60711000\)/);
  t.equal(implausibleUsage([row('2030-05-08', MAX_DAY_REQUESTS)], created, now), undefined, 'a whole day');
  t.equal(USAGE_CLOCK_ALLOWANCE_MS, 86_400_000);
});

for (const backend of BACKENDS) {
  t.test(`forged usage on ${backend}`, { skip: backendSkipReason(backend) }, async (t) => {
    const clock = { now: CREATED };
    const a = await startBackendApp(backend, {
      tune: (c) => {
        c.server.mode = 'cloud';
        c.licensing.public_url = 'https://cloud.example.com';
        c.licensing.package_file = writeTinyTarball(path.dirname(c.storage.path));
      },
      deps: { now: () => clock.now },
    });
    t.teardown(() => a.close());
    const at = clock.now.toISOString();
    await a.store.accounts.create({ accountId: 'acme', email: 'ops@acme.example', passwordHash: 'unused', role: 'operator', plan: 'paid', created: at, updated: at });
    const licence = await a.app.licences.create('acme', { label: 'gate', grants: ['identify', 'verify'] }, { byAdministrator: true });
    const fingerprint = crypto.createHash('sha256').update('board').digest('hex');
    const check = async (usage: unknown[]) => {
      const res = await a.call({
        method: 'POST', url: '/licence/v1/check', key: null,
        payload: { licenceKey: licence.licenceKey, fingerprint, nonce: crypto.randomBytes(18).toString('base64url'), version: '0.1.0', persons: 0, usage },
      });
      return { status: res.statusCode, code: res.json().code as string | undefined, message: res.json().message as string | undefined };
    };
    const counted = () => a.store.licenceUsage.range(licence.licenceId, '0000-01-01', '9999-12-31');
    clock.now = new Date('2030-05-20T10:00:00.000Z');

    const forged: [string, unknown[]][] = [
      ['1970-01-01', [{ day: '1970-01-01', operation: 'identify', requests: 1 }]],
      ['9999-12-31', [{ day: '9999-12-31', operation: 'identify', requests: 1 }]],
      ['before the licence', [{ day: '2030-05-04', operation: 'identify', requests: 1 }]],
      ['after tomorrow', [{ day: '2030-05-22', operation: 'identify', requests: 1 }]],
      ['a day repeated', [{ day: '2030-05-10', operation: 'verify', requests: 1 }, { day: '2030-05-10', operation: 'verify', requests: 1 }]],
      ['more than a day can hold', [{ day: '2030-05-10', operation: 'verify', requests: MAX_DAY_REQUESTS + 1 }]],
      ['10^9 on the creation day', [{ day: '2030-05-06', operation: 'identify', requests: 1_000_000_000 }]],
    ];
    for (const [what, usage] of forged) {
      const res = await check(usage);
      t.same([res.status, res.code], [400, 'R_003'], what);
    }
    t.same(await counted(), [], 'nothing of a refused check is counted');

    // The same whole day reported 30 times: the counter stops at a day's most, exactly.
    for (let i = 0; i < 30; i++) {
      t.equal((await check([{ day: '2030-05-10', operation: 'identify', requests: MAX_DAY_REQUESTS }])).status, 200);
    }
    const honest = [{ day: '2030-05-19', operation: 'verify', requests: 7 }, { day: '2030-05-20', operation: 'verify', requests: 3 }];
    t.equal((await check(honest)).status, 200);
    t.equal((await check([{ day: '2030-05-20', operation: 'verify', requests: 4 }])).status, 200);
    t.same(await counted(), [
      { day: '2030-05-10', operation: 'identify', requests: MAX_DAY_REQUESTS },
      { day: '2030-05-19', operation: 'verify', requests: 7 },
      { day: '2030-05-20', operation: 'verify', requests: 7 },
    ], 'stopped at the day\'s most; honest counts summed');
    const total = (await counted()).reduce((n, r) => n + r.requests, 0);
    t.ok(Number.isSafeInteger(total) && total === MAX_DAY_REQUESTS + 14, 'the total is an exact integer');
  });
}
