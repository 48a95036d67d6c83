// Moving a store's data to another backend (face-check migrate: LMDB -> PostgreSQL or back). Templates,
// reference images and the response-signing private key are opened with the source's data key and sealed
// again with the target's (each backend seals under its own key and places). Re-runnable: what the target
// holds already (same person id, account id, key hash, a signing key) is left as it is and counted; the
// result is proven by counts and a per-account checksum of the persons computed on both sides.
import crypto from 'node:crypto';
import type { AsyncStore } from '../storage/postgres/interfaces';

export interface MigrationReport {
  persons: { copied: number; present: number; failed: Array<{ accountId: string; personId: string; reason: string }> };
  accounts: { copied: number; present: number };
  apiKeys: { copied: number; present: number };
  /** 'copied', 'present' (the same key was there), 'differs' (the target made its own: clients pinned the source's). */
  responseSigningKey: 'copied' | 'present' | 'differs' | 'none';
  /** What this command does not move yet, as counts in the source (nothing of them is copied). */
  notMoved: { licences: number; activationCodes: number; sessions: number };
}

export interface AccountChecksum {
  persons: number;
  /** SHA-256 over the account's persons in id order: id, model, created, updated, template, image digest. */
  sha256: string;
}

/** Per account: its persons' count and checksum, read through the interface (the same on both backends). */
export async function personChecksums(store: AsyncStore): Promise<Map<string, AccountChecksum>> {
  const ids = new Map<string, string[]>();
  for await (const p of store.persons.all()) {
    let list = ids.get(p.accountId);
    if (!list) ids.set(p.accountId, (list = []));
    list.push(p.personId);
  }
  const out = new Map<string, AccountChecksum>();
  for (const accountId of [...ids.keys()].sort()) {
    const hash = crypto.createHash('sha256');
    const personIds = ids.get(accountId)!.sort();
    for (const personId of personIds) {
      const person = await store.persons.get(accountId, personId);
      const image = await store.persons.referenceImage(accountId, personId);
      if (!person) continue;  // removed meanwhile
      hash.update(`${personId}\0${person.modelId}\0${person.created}\0${person.updated}\0`);
      hash.update(new Uint8Array(person.template.buffer, person.template.byteOffset, person.template.byteLength));
      hash.update(crypto.createHash('sha256').update(image ?? Buffer.alloc(0)).digest());
    }
    out.set(accountId, { persons: personIds.length, sha256: hash.digest('hex') });
  }
  return out;
}

export async function migrateStore(from: AsyncStore, to: AsyncStore, progress: (line: string) => void = () => undefined): Promise<MigrationReport> {
  const report: MigrationReport = {
    persons: { copied: 0, present: 0, failed: [] },
    accounts: { copied: 0, present: 0 },
    apiKeys: { copied: 0, present: 0 },
    responseSigningKey: 'none',
    notMoved: {
      licences: (await from.licences.list()).length,
      activationCodes: (await from.activationCodes.list()).length,
      sessions: await from.sessions.count(),
    },
  };
  for (const account of await from.accounts.list()) {
    const outcome = await to.accounts.create(account);
    if (outcome === 'created') report.accounts.copied++;
    else report.accounts.present++;
  }
  for (const { keySha256, record } of await from.apiKeys.entries()) {
    if (await to.apiKeys.importEntry(keySha256, record)) report.apiKeys.copied++;
    else report.apiKeys.present++;
  }
  if (!await from.apiKeys.isEmpty() || report.accounts.copied + report.accounts.present > 0) {
    const pair = await from.serviceKeys.responseSigning();
    const stored = await to.serviceKeys.importResponseSigning(pair);
    report.responseSigningKey = stored.publicKey !== pair.publicKey ? 'differs'
      : stored.created === pair.created && report.apiKeys.copied + report.accounts.copied > 0 ? 'copied' : 'present';
  }
  // Collected first: a store must not be iterated while written (the source is not written, but one pass
  // of ids is cheap and lets a long copy report its progress per account).
  const persons: Array<{ accountId: string; personId: string }> = [];
  for await (const { accountId, personId } of from.persons.all()) persons.push({ accountId, personId });
  for (const { accountId, personId } of persons) {
    try {
      if (await to.persons.meta(accountId, personId)) {
        report.persons.present++;
        continue;
      }
      const person = await from.persons.get(accountId, personId);
      const referenceImage = await from.persons.referenceImage(accountId, personId);
      if (!person) continue;  // removed meanwhile
      if (!referenceImage) throw new Error('no reference image stored');
      const input = { modelId: person.modelId, template: person.template, referenceImage };
      const result = await to.persons.create(accountId, personId, input, person.created);
      if (!result.created) {
        report.persons.present++;
        continue;
      }
      // create stamps created and updated alike; a person updated since is brought to its own updated time.
      if (person.updated !== person.created) await to.persons.replace(accountId, personId, input, person.updated);
      report.persons.copied++;
      if (report.persons.copied % 1000 === 0) progress(`${report.persons.copied} persons copied`);
    } catch (err) {
      report.persons.failed.push({ accountId, personId, reason: (err as Error).message });
    }
  }
  return report;
}
