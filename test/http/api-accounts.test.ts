// Two accounts never cross: identify, get, verify, update and remove only see the caller's own
// persons, and the same person_id can exist in both.
import t from 'tap';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { startTestApp } from '../helpers/app';

t.test('accounts are separate', async (t) => {
  const a = await startTestApp();
  t.teardown(() => a.close());
  const now = new Date().toISOString();
  const k1 = (await a.store.apiKeys.create('acme', 'full', '', now)).key;
  const k2 = (await a.store.apiKeys.create('globex', 'full', '', now)).key;
  const alice = await fakePhotoB64({ identity: 1 });
  const bob = await fakePhotoB64({ identity: 2 });
  const call = (key: string, method: string, url: string, payload?: Record<string, unknown>) =>
    a.call({ method: method as 'POST', url, key, payload });

  t.equal((await call(k1, 'POST', '/person/face/alice', { faceImage: alice })).statusCode, 200);
  t.equal((await call(k2, 'POST', '/person/face/alice', { faceImage: bob })).statusCode, 200, 'same id, other account');
  t.equal((await call(k2, 'POST', '/person/face/x', { faceImage: alice })).statusCode, 200, 'no F_012 across accounts');

  t.equal((await call(k1, 'POST', '/person/recognize-face', { faceImage: bob })).statusCode, 410, 'acme cannot find globex\'s bob');
  t.equal((await call(k2, 'POST', '/person/recognize-face', { faceImage: bob })).json().personId, 'alice', 'globex finds its own "alice"');
  t.equal((await call(k1, 'POST', '/person/verify-face/alice', { faceImage: bob })).statusCode, 410);
  t.equal((await call(k1, 'GET', '/person/face/x')).statusCode, 404);
  t.equal((await call(k1, 'DELETE', '/person/face/x')).statusCode, 404);
  t.equal((await call(k1, 'PUT', '/person/face/x', { faceImage: bob })).statusCode, 404);
  t.equal((await call(k2, 'GET', '/person/face/x')).statusCode, 200, 'untouched');
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice' })).statusCode, 404, 'the bootstrap key is account "default"');
  t.equal((await call(k1, 'DELETE', '/person/face/alice')).statusCode, 200);
  t.equal((await call(k2, 'POST', '/person/recognize-face', { faceImage: bob })).json().personId, 'alice', 'globex unaffected');
});
