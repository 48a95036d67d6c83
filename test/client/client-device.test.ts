// The client package (client/) against a real device-mode service process: licensed by a licence server
// whose grants leave out "remove", with the synthetic depth camera showing a live face, then nobody, then
// unplugged. The live face's faceKey enrols and identifies; compare answers a similarity here (facesMatched in
// the cloud) and the client hides the difference; the licence refusal is a ForbiddenError.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import * as client from '../../client/src/node';
import { FaceCheckClient } from '../../client/src/node';
import { GRANTS } from '../../src/domain/grants';
import { tempDir } from '../helpers/app';
import { fakePhoto } from '../helpers/fake-engine';
import { FakeLicenceServer } from '../helpers/fake-licence-server';
import { startClientTestService } from '../helpers/client/services';

/** Calls `fn` until it resolves (or throws something `until` accepts), within `ms`. */
async function poll<T>(fn: () => Promise<T>, until: (err: unknown) => boolean, ms = 45_000): Promise<T | unknown> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (until(err) || Date.now() > end) return err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Calls `fn` until it throws what `wanted` accepts (the live face changes with the camera's scene), within `ms`. */
async function pollError(fn: () => Promise<unknown>, wanted: (err: unknown) => boolean, ms = 45_000): Promise<any> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      last = await fn();
    } catch (err) {
      last = err;
      if (wanted(err)) return err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

t.test('device mode: live face, faceKey, compare by similarity, a licence that does not grant remove, R_404 and R_400', async (t) => {
  const licenceServer = await FakeLicenceServer.start();
  t.teardown(() => licenceServer.close());
  licenceServer.licence.grants = GRANTS.filter((g) => g !== 'remove');
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'machine-id'), 'client-test-device-0123456789abcdef\n');
  const service = await startClientTestService(t, [
    '[server]', 'mode = device',
    '[camera]', 'source = synthetic',
    '[camera.synthetic]', 'scenario = live:10, none:5, unplug:600',
    '[licence]', `server_url = ${licenceServer.url}`, `key = ${licenceServer.licence.key}`,
    `public_key_file = ${licenceServer.writePublicKey(dir)}`, `machine_id_file = ${path.join(dir, 'machine-id')}`,
  ]);
  const c = new FaceCheckClient({ baseUrl: service.baseUrl, apiKey: service.apiKey });
  t.equal(await c.mode(), 'device');

  const live = await poll(() => c.liveFace(), (err) => !(err instanceof client.NoLiveFaceError));
  if (!(live && typeof live === 'object' && 'faceKey' in live)) {
    t.fail(`no live face: ${String(live)}\n${service.output().slice(-3000)}`);
    return;
  }
  const face = live as client.LiveFace;
  t.match(face.faceKey, /\S/);
  t.ok(Buffer.from(face.faceImage, 'base64').length > 100, 'the 120x120 image, base64');

  const enrolled = await c.createPerson('kiosk-user', face);
  t.equal(enrolled.personId, 'kiosk-user', 'createPerson with the LiveFace itself (its faceKey)');
  t.equal((await c.identify({ faceKey: face.faceKey })).personId, 'kiosk-user', 'identify with { faceKey }');
  t.equal((await c.verify('kiosk-user', face)).personId, 'kiosk-user');

  const same = await fakePhoto({ identity: 11 });
  const result = await c.compare(same, await fakePhoto({ identity: 11, variant: 1, cosine: 0.99 }));
  t.equal(result.matched, true);
  t.type(result.similarity, 'number', 'a device reports the similarity');
  t.ok(result.similarity! >= 80);
  const strict = await c.compare(same, await fakePhoto({ identity: 11, variant: 1, cosine: 0.99 }), { similarityThreshold: 100 });
  t.equal(strict.matched, result.similarity === 100, 'matched follows the threshold given');

  await t.test('FORBIDDEN: ForbiddenError, the licence does not grant remove', async (t) => {
    const forbidden = await c.removePerson('kiosk-user').then(() => undefined, (err: client.ServiceError) => err);
    t.ok(forbidden instanceof client.ForbiddenError, 'the licence does not grant remove');
    t.equal(forbidden?.status, 403);
    t.equal(forbidden?.code, 'FORBIDDEN');
    t.match(forbidden?.message, /does not grant "remove"/);
    t.match(forbidden?.requestId, /^[0-9a-f-]{36}$/);
  });

  await t.test('R_404: NoLiveFaceError once nobody is in front of the camera', async (t) => {
    const noFace = await pollError(() => c.liveFace(), (err) => err instanceof client.NoLiveFaceError);
    t.ok(noFace instanceof client.NoLiveFaceError, `R_404 once nobody is in front of the camera: ${String(noFace)}`);
    t.equal(noFace.code, 'R_404');
    t.equal(noFace.status, 400);
    t.match(noFace.requestId, /^[0-9a-f-]{36}$/);
  });

  await t.test('R_400: CameraNotConnectedError once the camera is unplugged', async (t) => {
    const unplugged = await pollError(() => c.liveFace(), (err) => err instanceof client.CameraNotConnectedError);
    t.ok(unplugged instanceof client.CameraNotConnectedError, `R_400 once the camera is unplugged: ${String(unplugged)}`);
    t.equal(unplugged.code, 'R_400');
    t.equal(unplugged.status, 400);
  });
});
