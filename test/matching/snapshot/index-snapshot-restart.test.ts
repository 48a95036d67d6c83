// The galleries start from their sealed snapshot, through real process restarts (the service's own start-up
// with the fake engine, whose model id is the installed models' real one): persons enrolled before a stop are
// found from the snapshot; changes after it (enrol, update, remove, then kill -9) are replayed; a snapshot
// that is damaged, cut short, of another model, of another layout, of another store or missing is ignored
// and the account rebuilt from the store, and identify still finds everyone. The chunk-level cases (the ones
// that reach the unsealer) run both natively and with FACE_CHECK_SNAPSHOT_UNSEAL=js, the JavaScript path a
// process without OpenSSL's symbols takes. Natively, the snapshot is opened before the store, as
// `face-check serve` begins it (src/matching/snapshot/early-import.ts), and the log line says so.
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';

import { similarityIndex } from '../../../src/similarity-index/similarity-index';
import { headerBlock, headerBlockLength, parseHeader } from '../../../src/matching/snapshot/format';
import { SNAPSHOT_FOLDER, snapshotFileName } from '../../../src/matching/snapshot/place';
import { tempDir } from '../../helpers/app';
import { fakePhotoB64 } from '../../helpers/fake-engine';
import { request, startServiceProcess, writeIni, type ServiceProcess } from '../../helpers/service-process';

const ACCOUNT = 'default';  // the bootstrap key's account
const native = similarityIndex().sealedImport.available;

/** The last "galleries loaded" log line of the process. */
function galleriesLoaded(service: ServiceProcess): { persons: number; from_snapshot: number; rebuilt: number; replayed: number; opened_early: number; not_opened_early?: string; rebuild_reasons?: Record<string, number> } {
  const lines = service.output().split('\n').filter((l) => l.includes('"galleries loaded"'));
  if (!lines.length) throw new Error(`no "galleries loaded" line in:\n${service.output()}`);
  return JSON.parse(lines[lines.length - 1]);
}

/** Starts the service with the snapshots unsealed in JavaScript (`js`) or as this process's environment says. */
async function startWith(ini: string, unseal: 'js' | undefined): Promise<ServiceProcess> {
  const saved = process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
  if (unseal) process.env.FACE_CHECK_SNAPSHOT_UNSEAL = unseal;
  try {
    return await startServiceProcess(ini, 'fake');
  } finally {
    if (saved === undefined) delete process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
    else process.env.FACE_CHECK_SNAPSHOT_UNSEAL = saved;
  }
}

async function enrol(t: Test, base: string, id: string, identity: number): Promise<void> {
  const res = await request(base, 'POST', `/person/face/${id}`, { faceImage: await fakePhotoB64({ identity }) });
  t.equal(res.status, 200, `enrol ${id}: ${JSON.stringify(res.body)}`);
}

/** The person identify finds for a new photo of `identity`, or undefined (410). */
async function identify(base: string, identity: number): Promise<string | undefined> {
  const res = await request(base, 'POST', '/person/recognize-face', { faceImage: await fakePhotoB64({ identity, variant: 3, cosine: 0.9 }) });
  if (res.status === 410) return undefined;
  if (res.status !== 200) throw new Error(`identify ${identity}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.personId;
}

function snapshotFile(dir: string): string {
  return path.join(dir, 'store', SNAPSHOT_FOLDER, snapshotFileName(ACCOUNT));
}

t.test('enrolled persons come back from the snapshot; changes after it are replayed', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = writeIni(dir);
  let service = await startServiceProcess(ini, 'fake');
  for (let i = 1; i <= 5; i++) await enrol(t, service.address, `p${i}`, i);
  t.equal(await service.stop(), 0, 'SIGTERM stops with exit code 0');
  t.match(service.output(), /"gallery snapshot written"/, 'the stop wrote the snapshot');
  const file = snapshotFile(dir);
  t.equal(fs.statSync(file).mode & 0o777, 0o600, 'the snapshot is 0600');
  t.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700, 'its folder is 0700');

  service = await startServiceProcess(ini, 'fake');
  t.match(galleriesLoaded(service), { persons: 5, from_snapshot: 1, rebuilt: 0, replayed: 0, opened_early: native ? 1 : 0 },
    'loaded from the snapshot (opened before the store, where the native unsealer is available)');
  for (let i = 1; i <= 5; i++) t.equal(await identify(service.address, i), `p${i}`, `identify finds p${i}`);
  t.equal(await identify(service.address, 99), undefined, 'a stranger is not matched');

  // After the snapshot: an enrolment, an update to another face, a removal; then a crash (no stop snapshot).
  await enrol(t, service.address, 'p6', 6);
  t.equal((await request(service.address, 'PUT', '/person/face/p2', { faceImage: await fakePhotoB64({ identity: 7 }) })).status, 200);
  t.equal((await request(service.address, 'DELETE', '/person/face/p3')).status, 200);
  await service.kill9();

  service = await startServiceProcess(ini, 'fake');
  t.match(galleriesLoaded(service), { persons: 5, from_snapshot: 1, rebuilt: 0, replayed: 3, opened_early: native ? 1 : 0 }, 'the snapshot and three changes replayed');
  t.equal(await identify(service.address, 6), 'p6', 'the enrolment after the snapshot');
  t.equal(await identify(service.address, 7), 'p2', 'the update after the snapshot');
  t.equal(await identify(service.address, 2), undefined, 'the replaced face is gone');
  t.equal(await identify(service.address, 3), undefined, 'the removed person is gone');
  for (const i of [1, 4, 5]) t.equal(await identify(service.address, i), `p${i}`, `p${i} still found`);
  const dup = await request(service.address, 'POST', '/person/face/again', { faceImage: await fakePhotoB64({ identity: 6 }) });
  t.same([dup.status, dup.body?.code], [400, 'F_012'], 'the replayed enrolment is caught as a duplicate');
  t.equal(await service.stop(), 0);
});

t.test('a damaged, cut, foreign or missing snapshot is ignored and the account rebuilt', async (t) => {
  const dir = tempDir();
  const other = tempDir();
  t.teardown(() => { fs.rmSync(dir, { recursive: true, force: true }); fs.rmSync(other, { recursive: true, force: true }); });
  const ini = writeIni(dir);
  let service = await startServiceProcess(ini, 'fake');
  for (let i = 1; i <= 5; i++) await enrol(t, service.address, `p${i}`, i);
  t.equal(await service.stop(), 0);
  const file = snapshotFile(dir);
  const good = fs.readFileSync(file);

  // The same account's snapshot from another store (another data key): the same persons, enrolled there.
  const foreign = await startServiceProcess(writeIni(other), 'fake');
  for (let i = 1; i <= 5; i++) await enrol(t, foreign.address, `p${i}`, i);
  t.equal(await foreign.stop(), 0);
  const foreignSnapshot = fs.readFileSync(snapshotFile(other));

  const { header, block } = parseHeader(good.subarray(0, headerBlockLength(good)), good.length);
  const withHeader = (changes: object) => Buffer.concat([headerBlock({ ...header, ...changes }), good.subarray(block.length)]);
  const flipped = (at: number) => { const b = Buffer.from(good); b[at] ^= 0x01; return b; };
  const cases: Array<[string, Buffer | undefined, RegExp, Array<'js' | undefined>]> = [
    ['one byte of a chunk flipped', flipped(good.length - 40), /does not open/, [undefined, 'js']],
    ['one byte of the header flipped', flipped(40), /checksum|not JSON|malformed/, [undefined]],
    ['the last bytes cut off', good.subarray(0, good.length - 7), /describes/, [undefined]],
    ['torn: half of the file', good.subarray(0, Math.floor(good.length / 2)), /describes|cut short/, [undefined]],
    ['another model', withHeader({ modelId: `${header.modelId}+old` }), /another model/, [undefined]],
    ['another index layout', withHeader({ layout: 'int8-rowscale-v0' }), /layout/, [undefined]],
    ['another store\'s snapshot', foreignSnapshot, /does not open/, [undefined, 'js']],
    ['no snapshot', undefined, /no snapshot/, [undefined]],
  ];
  for (const [name, bytes, reason, unsealers] of cases) for (const unseal of unsealers) {
    const what = unseal ? `${name} (unsealed in JavaScript)` : name;
    if (bytes) fs.writeFileSync(file, bytes, { mode: 0o600 });
    else fs.rmSync(file, { force: true });
    service = await startWith(ini, unseal);
    const loaded = galleriesLoaded(service);
    t.match(loaded, { persons: 5, from_snapshot: 0, rebuilt: 1, opened_early: 0 }, `${what}: rebuilt`);
    t.match(Object.keys(loaded.rebuild_reasons ?? {}).join(' | '), reason, `${what}: the reason is logged`);
    for (let i = 1; i <= 5; i++) t.equal(await identify(service.address, i), `p${i}`, `${what}: identify finds p${i}`);
    await service.kill9();
  }

  // The good snapshot still loads, either way.
  fs.writeFileSync(file, good, { mode: 0o600 });
  for (const unseal of [undefined, 'js'] as const) {
    service = await startWith(ini, unseal);
    t.match(galleriesLoaded(service), { persons: 5, from_snapshot: 1, rebuilt: 0, opened_early: native && !unseal ? 1 : 0 },
      `the intact snapshot loads${unseal ? ' (JavaScript, after the store)' : ''}`);
    if (unseal) t.match(galleriesLoaded(service), { not_opened_early: 'snapshots are unsealed in JavaScript here' }, 'and the log says why not early');
    for (let i = 1; i <= 5; i++) t.equal(await identify(service.address, i), `p${i}`, `identify finds p${i}${unseal ? ' (JavaScript)' : ''}`);
    await service.kill9();
  }
});

t.test('[index] snapshot = false: every start rebuilds and no snapshot is written', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = writeIni(dir, '[index]\nsnapshot = false');
  let service = await startServiceProcess(ini, 'fake');
  await enrol(t, service.address, 'p1', 1);
  t.equal(await service.stop(), 0);
  t.notOk(fs.existsSync(path.join(dir, 'store', SNAPSHOT_FOLDER)), 'no snapshot folder');
  service = await startServiceProcess(ini, 'fake');
  t.match(galleriesLoaded(service), { persons: 1, from_snapshot: 0, rebuilt: 1 });
  t.equal(await identify(service.address, 1), 'p1');
  t.equal(await service.stop(), 0);
});
