// The client against `face-check serve` itself (the installed program from dist/, with the real engine and
// models) and real photos: crops of different people from the face-api demo group photos (fetched from npm
// into the cache at test time) and a group photo. What the README example does, with faces the models see.
import fs from 'node:fs';
import path from 'node:path';
import type { Sharp } from 'sharp';
import t from 'tap';
import * as client from '../../client/src/node';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { faceCrop, groupPhoto, photosSkip } from '../helpers/photos';
import { startServiceProcess, writeIni } from '../helpers/service-process';

const same = (s: Sharp) => s.flop().resize(400); // another photo of the same face: mirrored, smaller

t.test('the client against face-check serve with the real engine and real photos', { skip: photosSkip() }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const service = await startServiceProcess(writeIni(dir), 'real');
  t.teardown(() => service.stop());
  const c = new client.FaceCheckClient({ baseUrl: service.address, apiKey: BOOTSTRAP_KEY });
  t.equal(await c.mode(), 'cloud');

  const alice = path.join(dir, 'alice.jpg');
  fs.writeFileSync(alice, await faceCrop('A'));
  const atTheGate = await faceCrop('A', same);
  const bob = await faceCrop('B');

  t.equal((await c.createPerson('alice', alice)).personId, 'alice', 'enrolled from a file path');
  t.equal((await c.identify(atTheGate)).personId, 'alice', 'identified from another photo');
  t.equal((await c.verify('alice', atTheGate)).personId, 'alice', 'verified');
  t.same(await c.compare(alice, atTheGate), { matched: true, similarity: null }, 'same person: matched');
  t.same(await c.compare(alice, bob), { matched: false, similarity: null }, 'another person: not matched');

  const stranger = await c.identify(bob).catch((err: unknown) => err);
  t.ok(stranger instanceof client.NoPersonMatchedError, 'a stranger: RF_001');
  t.equal((stranger as client.ServiceError).status, 410);
  const impostor = await c.verify('alice', bob).catch((err: unknown) => err);
  t.ok(impostor instanceof client.NoPersonMatchedError, 'an impostor does not verify');

  const group = await c.createPerson('group', groupPhoto(3)).catch((err: unknown) => err);
  t.ok(group instanceof client.NotOneFaceError, `a group photo: F_001 (${String(group)})`);
  t.ok(group instanceof client.FaceCheckFailedError);
  const again = await c.createPerson('alice-again', atTheGate).catch((err: unknown) => err);
  t.ok(again instanceof client.FaceExistsError, `the same face under another id: F_012 (${String(again)})`);
  t.same((await c.removePerson('alice')).personId, 'alice');
});
