// Persons: each template and reference image opened with the source's data key and sealed again with the
// target's (each backend seals under its own key and places), created and updated kept. A person id the
// target holds is left as it is and counted.
import crypto from 'node:crypto';
import type { AsyncStore } from '../../storage/interfaces';
import { instant, type Checksums } from './checksum';
import { emptyCount, tick, type MovedKind } from './kind';

/**
 * Per account: its persons' count and a SHA-256 over them in id order: id, model, created, updated, template,
 * image digest.
 */
export async function personChecksums(store: AsyncStore): Promise<Checksums> {
  const ids = await personIds(store);
  const out: Checksums = new Map();
  for (const accountId of [...ids.keys()].sort()) {
    const hash = crypto.createHash('sha256');
    const list = ids.get(accountId)!.sort();
    let count = 0;
    for (const personId of list) {
      const person = await store.persons.get(accountId, personId);
      const image = await store.persons.referenceImage(accountId, personId);
      if (!person) continue;  // removed meanwhile
      count++;
      hash.update(`${personId}\0${person.modelId}\0${instant(person.created)}\0${instant(person.updated)}\0`);
      hash.update(new Uint8Array(person.template.buffer, person.template.byteOffset, person.template.byteLength));
      hash.update(crypto.createHash('sha256').update(image ?? Buffer.alloc(0)).digest());
    }
    out.set(accountId, { count, sha256: hash.digest('hex') });
  }
  return out;
}

/** Account -> person ids; collected first, since a store is not iterated while written. */
async function personIds(store: AsyncStore): Promise<Map<string, string[]>> {
  const ids = new Map<string, string[]>();
  for await (const p of store.persons.all()) {
    let list = ids.get(p.accountId);
    if (!list) ids.set(p.accountId, (list = []));
    list.push(p.personId);
  }
  return ids;
}

export const PERSONS: MovedKind = {
  name: 'persons',
  async copy(from, to, progress) {
    const count = emptyCount();
    const ids = await personIds(from);
    const total = [...ids.values()].reduce((n, list) => n + list.length, 0);
    for (const [accountId, list] of ids) {
      for (const personId of list) {
        try {
          if (await to.persons.meta(accountId, personId)) {
            count.present++;
          } else if (await copyPerson(from, to, accountId, personId)) {
            count.copied++;
          } else {
            count.present++;
          }
        } catch (err) {
          count.failed.push({ item: `${accountId}/${personId}`, reason: (err as Error).message });
        }
        tick(count, 'persons', total, progress);
      }
    }
    return count;
  },
  checksums: personChecksums,
};

/** True when written; false when the person vanished from the source or appeared on the target meanwhile. */
async function copyPerson(from: AsyncStore, to: AsyncStore, accountId: string, personId: string): Promise<boolean> {
  const person = await from.persons.get(accountId, personId);
  const referenceImage = await from.persons.referenceImage(accountId, personId);
  if (!person) return false;
  if (!referenceImage) throw new Error('no reference image stored');
  const input = { modelId: person.modelId, template: person.template, referenceImage };
  const result = await to.persons.create(accountId, personId, input, person.created);
  if (!result.created) return false;
  // create stamps created and updated alike; a person updated since is brought to its own updated time.
  if (person.updated !== person.created) await to.persons.replace(accountId, personId, input, person.updated);
  return true;
}
