// Crash safety of the gallery snapshots, through real processes: a service killed (SIGKILL) while it writes a
// snapshot leaves the previous one usable, and after the restart every acknowledged person is found (the
// previous snapshot plus the change log's replay); a schema-3 store (no template rows) is migrated by the
// service's start and identify works from the rows it wrote.
import fs from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import t from 'tap';

import { SNAPSHOT_FOLDER } from '../../../src/matching/snapshot/place';
import { TEMP_MARK } from '../../../src/matching/snapshot/write';
import { openStore, SCHEMA_VERSION } from '../../../src/storage/lmdb/store';
import { tempDir } from '../../helpers/app';
import { FAKE_MODEL_ID, fakePhotoB64, templateFor } from '../../helpers/fake-engine';
import { request, startServiceProcess, writeIni, type ServiceProcess } from '../../helpers/service-process';

const ACCOUNT = 'default';
const NOW = '2024-01-01T00:00:00.000Z';

function galleriesLoaded(service: ServiceProcess): Record<string, unknown> {
  const lines = service.output().split('\n').filter((l) => l.includes('"galleries loaded"'));
  if (!lines.length) throw new Error(`no "galleries loaded" line in:\n${service.output()}`);
  return JSON.parse(lines[lines.length - 1]);
}

const writes = (service: ServiceProcess) => service.output().split('"gallery snapshot written"').length - 1;

async function identify(base: string, identity: number): Promise<string | undefined> {
  const res = await request(base, 'POST', '/person/recognize-face', { faceImage: await fakePhotoB64({ identity, variant: 3, cosine: 0.9 }) });
  if (res.status === 410) return undefined;
  if (res.status !== 200) throw new Error(`identify ${identity}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.personId;
}

async function until(what: string, ok: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('killed while writing a snapshot: the previous one stays usable and nothing acknowledged is lost', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = writeIni(dir, '[index]\nsnapshot_interval_s = 1\nsnapshot_min_changes = 1');
  // 30,000 persons, so that a snapshot takes long enough to be caught half-written (~21 MB).
  const SEEDED = 30_000;
  const store = await openStore(path.join(dir, 'store'));
  for (let from = 0; from < SEEDED; from += 5000) {
    await store.persons.createMany(ACCOUNT, Array.from({ length: 5000 }, (_, k) => ({
      personId: `seed-${from + k}`, modelId: FAKE_MODEL_ID, template: templateFor(1000 + from + k, 0, 1), referenceImage: Buffer.from('i'),
    })), NOW);
  }
  await store.close();

  let service = await startServiceProcess(ini, 'fake');
  await until('the first snapshot (the start rebuilt the gallery)', () => writes(service) >= 1);
  const folder = path.join(dir, 'store', SNAPSHOT_FOLDER);
  const temps = () => fs.readdirSync(folder).filter((n) => n.includes(TEMP_MARK));

  // Enrol one more person at a time; the next interval writes a snapshot; kill the process as soon as its
  // temporary file appears. A write that finishes before the kill lands is retried with the next person.
  const late: number[] = [];
  let caught = false;
  for (let attempt = 0; attempt < 20 && !caught; attempt++) {
    const identity = 50_000 + attempt;
    const res = await request(service.address, 'POST', `/person/face/late-${attempt}`, { faceImage: await fakePhotoB64({ identity }) });
    t.equal(res.status, 200, `late-${attempt} acknowledged`);
    late.push(identity);
    const before = writes(service);
    const watcher = fs.watch(folder);
    caught = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 5000);
      const look = () => {
        if (temps().length > 0) {
          service.child.kill('SIGKILL');
          clearTimeout(timer);
          resolve(true);
        } else if (writes(service) > before) {
          clearTimeout(timer);
          resolve(false);
        }
      };
      watcher.on('change', look);
      service.child.stdout!.on('data', look);
    });
    watcher.close();
  }
  t.ok(caught, 'the process was killed with a snapshot half-written');
  await service.kill9();
  t.ok(temps().length > 0, 'the half-written temporary file is left behind');

  service = await startServiceProcess(ini, 'fake');
  t.match(galleriesLoaded(service), { persons: SEEDED + late.length, from_snapshot: 1, rebuilt: 0 }, 'the previous snapshot loads');
  t.ok((galleriesLoaded(service).replayed as number) >= 1, 'and the changes after it are replayed');
  t.same(temps(), [], 'the dead writer\'s temporary file is removed');
  for (const [i, identity] of late.entries()) t.equal(await identify(service.address, identity), `late-${i}`, `late-${i} found`);
  for (const k of [0, 12_345, SEEDED - 1]) t.equal(await identify(service.address, 1000 + k), `seed-${k}`, `seed-${k} found`);
  t.equal(await service.stop(), 0);
});

t.test('a schema-3 store is migrated at the service\'s start and identify re-ranks from the new rows', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const storeDir = path.join(dir, 'store');
  const store = await openStore(storeDir);
  await store.persons.createMany(ACCOUNT, Array.from({ length: 40 }, (_, k) => ({
    personId: `p${k}`, modelId: FAKE_MODEL_ID, template: templateFor(k + 1, 0, 1), referenceImage: Buffer.from('i'),
  })), NOW);
  await store.close();
  // What schema 3 wrote: no rows, counts or change log.
  const env = open({ path: storeDir, compression: false, maxDbs: 32 });
  for (const name of ['template-rows', 'template-counts', 'changes', 'change-heads']) await env.openDB({ name }).drop();
  const meta = env.openDB<unknown, string>({ name: 'meta' });
  await meta.transaction(() => { meta.put('schema', 3); meta.remove('change-seq'); });
  await env.close();

  const service = await startServiceProcess(writeIni(dir), 'fake');
  t.match(galleriesLoaded(service), { persons: 40, rebuilt: 1 });
  for (const k of [0, 17, 39]) t.equal(await identify(service.address, k + 1), `p${k}`, `p${k} found`);
  t.equal(await service.stop(), 0);
  const reopened = await openStore(storeDir);
  t.equal(reopened.persons.templatesOf(ACCOUNT, Array.from({ length: 40 }, (_, k) => `p${k}`)).filter(Boolean).length, 40, 'a row per person');
  await reopened.close();
  const env2 = open({ path: storeDir, compression: false, maxDbs: 32, readOnly: true });
  t.equal(env2.openDB<unknown, string>({ name: 'meta' }).get('schema'), SCHEMA_VERSION);
  await env2.close();
});
