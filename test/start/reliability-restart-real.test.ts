// The installed program with the real engine and real photos, restarted for real: after SIGKILL and after
// SIGTERM the gallery holds every enrolled person, identify finds each one, and the same face under a new id
// is refused as a duplicate (F_012). The start-up log reports no person with a template of another model.
import t from 'tap';
import { tempDir } from '../helpers/app';
import { b64, faceCrop, photosSkip, type CropName } from '../helpers/photos';
import { request, startServiceProcess, writeIni } from '../helpers/service-process';

const ENROLLED: CropName[] = ['A', 'B', 'E'];

t.test('real engine: enrolled persons survive kill -9 and a clean stop', { skip: photosSkip() }, async (t) => {
  const dir = tempDir();
  const ini = writeIni(dir);
  // Another photo of the same person: mirrored and slightly resized, so identify does not see the same bytes.
  const probe = (name: CropName) => faceCrop(name, (s) => s.flop().resize(400));
  let service = await startServiceProcess(ini, 'real');
  for (const name of ENROLLED) {
    const res = await request(service.address, 'POST', `/person/face/person-${name}`, { faceImage: b64(await faceCrop(name)) });
    t.equal(res.status, 200, `enrol ${name}: ${JSON.stringify(res.body)}`);
  }
  const before = new Map<string, unknown>();
  for (const name of ENROLLED) before.set(name, (await request(service.address, 'GET', `/person/face/person-${name}`)).body);

  for (const how of ['SIGKILL', 'SIGTERM'] as const) {
    if (how === 'SIGKILL') await service.kill9();
    else t.equal(await service.stop(), 0, 'SIGTERM stops with exit code 0');
    service = await startServiceProcess(ini, 'real');
    t.notMatch(service.output(), /another model/, `after ${how}: no person is reported stale`);
    for (const name of ENROLLED) {
      const found = await request(service.address, 'POST', '/person/recognize-face', { faceImage: b64(await probe(name)) });
      t.same([found.status, found.body], [200, before.get(name)], `after ${how}: identify finds ${name}`);
      const dup = await request(service.address, 'POST', `/person/face/again-${name}`, { faceImage: b64(await faceCrop(name)) });
      t.same([dup.status, dup.body?.code], [400, 'F_012'], `after ${how}: ${name} again is a duplicate`);
    }
    const stranger = await request(service.address, 'POST', '/person/recognize-face', { faceImage: b64(await faceCrop('D')) });
    t.equal(stranger.status, 410, `after ${how}: a person never enrolled is not matched`);
  }
  t.equal(await service.stop(), 0);
});
