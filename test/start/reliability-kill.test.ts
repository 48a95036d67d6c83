// Nothing acknowledged is lost by a crash: concurrent enrolments and removals against a real service
// process, killed with SIGKILL at a random moment, restarted on the same store, repeated. After every restart
// each acknowledged create is stored, identifiable and caught as a duplicate; each acknowledged removal
// stays removed; a write cut off by the kill is either whole or absent.
import t, { type Test } from 'tap';
import { fakePhotoB64 } from '../helpers/fake-engine';
import { tempDir } from '../helpers/app';
import { request, startServiceProcess, writeIni } from '../helpers/service-process';

const ROUNDS = 4;
const WORKERS = 6;

interface Person { id: string; identity: number; created?: string }

t.test('kill -9 during concurrent writes, restart, repeat: every acknowledged write holds', async (t) => {
  const dir = tempDir();
  const ini = writeIni(dir);
  const alive = new Map<string, Person>();      // acknowledged creates not removed since
  const removed = new Set<string>();            // acknowledged removals
  const uncertain = new Map<string, Person>();  // in flight when the process died
  let nextIdentity = 1;

  for (let round = 0; round < ROUNDS; round++) {
    const service = await startServiceProcess(ini, 'fake');
    const base = service.address;
    await verify(t, base, round, alive, removed, uncertain);

    let killed = false;
    const worker = async (w: number) => {
      for (let i = 0; !killed; i++) {
        const own = [...alive.values()].filter((p) => p.id.startsWith(`w${w}-`));
        if (i % 5 === 4 && own.length > 0) {
          const victim = own[i % own.length];
          uncertain.set(victim.id, victim);
          try {
            const res = await request(base, 'DELETE', `/person/face/${victim.id}`);
            if (res.status !== 200) throw new Error(`remove ${victim.id}: ${res.status} ${JSON.stringify(res.body)}`);
            alive.delete(victim.id);
            removed.add(victim.id);
            uncertain.delete(victim.id);
          } catch (err) {
            if (!killed) throw err;
          }
          continue;
        }
        const p: Person = { id: `w${w}-r${round}-${i}`, identity: nextIdentity++ };
        uncertain.set(p.id, p);
        try {
          const res = await request(base, 'POST', `/person/face/${p.id}`, { faceImage: await fakePhotoB64({ identity: p.identity }) });
          if (res.status !== 200) throw new Error(`create ${p.id}: ${res.status} ${JSON.stringify(res.body)}`);
          p.created = res.body.created;
          alive.set(p.id, p);
          uncertain.delete(p.id);
        } catch (err) {
          if (!killed) throw err;  // only the kill may cut a request off
        }
      }
    };
    const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
    await new Promise((r) => setTimeout(r, 200 + Math.random() * 600));
    killed = true;
    await service.kill9();
    await Promise.all(workers);
    t.pass(`round ${round}: killed with ${alive.size} persons acknowledged, ${uncertain.size} writes in flight`);
  }

  const last = await startServiceProcess(ini, 'fake');
  await verify(t, last.address, ROUNDS, alive, removed, uncertain);
  t.equal(await last.stop(), 0, 'a clean stop after all');
  t.ok(alive.size > 20, `enough writes were acknowledged to mean something (${alive.size})`);
});

async function verify(t: Test, base: string, round: number, alive: Map<string, Person>, removed: Set<string>,
  uncertain: Map<string, Person>): Promise<void> {
  const lost: string[] = [];
  const notFound: string[] = [];
  const notDuplicate: string[] = [];
  for (const p of alive.values()) {
    if (uncertain.has(p.id)) continue;  // a removal of it was cut off by the kill: judged below
    const got = await request(base, 'GET', `/person/face/${p.id}`);
    if (got.status !== 200 || got.body.created !== p.created) { lost.push(p.id); continue; }
    const photo = await fakePhotoB64({ identity: p.identity, variant: 3, cosine: 0.995 });
    const found = await request(base, 'POST', '/person/recognize-face', { faceImage: photo });
    if (found.status !== 200 || found.body.personId !== p.id) notFound.push(`${p.id}: ${found.status}`);
    const again = await request(base, 'POST', `/person/face/${p.id}-dup`, { faceImage: await fakePhotoB64({ identity: p.identity }) });
    if (again.body?.code !== 'F_012') notDuplicate.push(`${p.id}: ${again.status} ${again.body?.code}`);
  }
  t.same(lost, [], `start ${round}: every acknowledged person is stored with its created time`);
  t.same(notFound, [], `start ${round}: every acknowledged person is identified`);
  t.same(notDuplicate, [], `start ${round}: every acknowledged face is caught as a duplicate`);
  const resurrected: string[] = [];
  for (const id of removed) if ((await request(base, 'GET', `/person/face/${id}`)).status !== 404) resurrected.push(id);
  t.same(resurrected, [], `start ${round}: acknowledged removals stay removed`);
  // A write the kill cut off is whole or absent: stored means identifiable.
  const torn: string[] = [];
  for (const p of uncertain.values()) {
    const got = await request(base, 'GET', `/person/face/${p.id}`);
    const found = await request(base, 'POST', '/person/recognize-face', { faceImage: await fakePhotoB64({ identity: p.identity }) });
    const stored = got.status === 200;
    if (stored !== (found.status === 200 && found.body.personId === p.id)) torn.push(`${p.id}: get ${got.status}, identify ${found.status}`);
    if (stored && !removed.has(p.id)) { p.created = got.body.created; alive.set(p.id, p); }
    if (!stored) { alive.delete(p.id); if (removed.has(p.id) === false && p.created) removed.add(p.id); }
  }
  uncertain.clear();
  t.same(torn, [], `start ${round}: no write is half there`);
}
