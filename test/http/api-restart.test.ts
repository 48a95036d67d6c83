// Restart: enrol, stop, start on the same LMDB folder; the gallery is rebuilt and identify finds
// the same persons with the same created/updated.
import t from 'tap';
import { FAKE_MODEL_ID, fakePhotoB64, FakeEngine, OTHER_MODEL_IDS } from '../helpers/fake-engine';
import { startTestApp, tempDir } from '../helpers/app';

t.test('persons survive a restart', async (t) => {
  const dir = tempDir();
  const engine = new FakeEngine();
  const first = await startTestApp({ dir, engine });
  const enrolled: Record<string, unknown> = {};
  for (const [id, identity] of [['alice', 1], ['bob', 2], ['carol', 3]] as const) {
    const res = await first.call({ method: 'POST', url: `/person/face/${id}`, payload: { faceImage: await fakePhotoB64({ identity }) } });
    enrolled[id] = res.json();
  }
  await first.call({ method: 'PUT', url: '/person/face/bob', payload: { faceImage: await fakePhotoB64({ identity: 4 }) } });
  enrolled.bob = (await first.call({ method: 'GET', url: '/person/face/bob' })).json();
  await first.call({ method: 'DELETE', url: '/person/face/carol' });
  await first.stop();

  const second = await startTestApp({ dir, engine });
  t.teardown(() => second.close());
  const identify = async (identity: number) =>
    second.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await fakePhotoB64({ identity, variant: 2, cosine: 0.9 }) } });
  t.same((await identify(1)).json(), enrolled.alice);
  t.same((await identify(4)).json(), enrolled.bob, 'the updated reference');
  t.equal((await identify(2)).statusCode, 410, 'the replaced reference is gone');
  t.equal((await identify(3)).statusCode, 410, 'the removed person is gone');
  t.same((await second.call({ method: 'GET', url: '/person/face/alice' })).json(), enrolled.alice);
  t.equal((await second.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: await fakePhotoB64({ identity: 9 }) } })).json().code, 'CP_002');
});

t.test('templates of another model are not loaded after a model change', async (t) => {
  const dir = tempDir();
  const first = await startTestApp({ dir, engine: new FakeEngine(OTHER_MODEL_IDS[0]) });
  await first.call({ method: 'POST', url: '/person/face/alice', payload: { faceImage: await fakePhotoB64({ identity: 1 }) } });
  await first.stop();
  const second = await startTestApp({ dir, engine: new FakeEngine(FAKE_MODEL_ID) });
  t.teardown(() => second.close());
  const probe = await fakePhotoB64({ identity: 1 });
  t.equal((await second.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: probe } })).statusCode, 410);
  const verify = await second.call({ method: 'POST', url: '/person/verify-face/alice', payload: { faceImage: probe } });
  t.same([verify.statusCode, verify.json().code], [503, 'SERVICE_UNAVAILABLE'], 'verify asks for a reindex');
  t.equal((await second.call({ method: 'GET', url: '/person/face/alice' })).statusCode, 200, 'the record itself is there');
});
