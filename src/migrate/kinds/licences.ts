// Licences and activation codes. A licence moves as it is stored (grants, limits, status, the device it is
// bound to, its last check, its device API keys by their hashes); its key is opened with the source's data key only to be sealed again with the
// target's, so the key a device holds keeps checking in and is never written in clear. Activation codes move
// by the SHA-256 they are stored under, used or not: an unused code stays usable once, a used one stays used.
import { deviceKeysOf } from '../../storage/device-keys';
import { licenceKeySha256, type LicenceRecord } from '../../storage/records';
import type { AsyncStore } from '../../storage/interfaces';
import { canonical, checksumsOf, instant, STORE_SCOPE, type Checksums } from './checksum';
import { emptyCount, tick, type MovedKind } from './kind';

export const ACTIVATION_CODES: MovedKind = {
  name: 'activation codes',
  async copy(from, to) {
    const count = emptyCount();
    for (const { codeSha256, record } of await from.activationCodes.entries()) {
      if (await to.activationCodes.add(codeSha256, record)) count.copied++;
      else count.present++;
    }
    return count;
  },
  async checksums(store): Promise<Checksums> {
    return checksumsOf((await store.activationCodes.entries()).map(({ codeSha256, record: c }) => ({
      scope: STORE_SCOPE, key: codeSha256,
      content: canonical({ ...c, created: instant(c.created), expires: instant(c.expires), used: c.used && { ...c.used, at: instant(c.used.at) } }),
    })));
  },
};

export const LICENCES: MovedKind = {
  name: 'licences',
  async copy(from, to, progress) {
    const count = emptyCount();
    const licences = await from.licences.list();
    for (const record of licences) {
      if (await to.licences.get(record.licenceId)) {
        count.present++;
      } else {
        let licenceKey: string;
        try {
          licenceKey = await from.licences.openKey(record);
        } catch {
          count.failed.push({ item: record.licenceId, reason: 'its key does not open with the source\'s data key' });
          continue;
        }
        if (await to.licences.importRecord(record, licenceKey)) count.copied++;
        else count.failed.push({ item: record.licenceId, reason: 'another licence of the target has its key' });
      }
      tick(count, 'licences', licences.length, progress);
    }
    return count;
  },
  async checksums(store): Promise<Checksums> {
    const items = [];
    for (const l of await store.licences.list()) {
      items.push({ scope: l.accountId, key: l.licenceId, content: canonical({ ...comparable(l), keyOpens: await keyOpens(store, l) }) });
    }
    return checksumsOf(items);
  },
};

/** The record as both backends must hold it; the sealed key differs by design (another data key). */
function comparable(l: LicenceRecord): Omit<LicenceRecord, 'sealedKey'> {
  const { sealedKey: _sealed, ...rest } = l;
  return {
    ...rest, expires: instant(l.expires) ?? null, created: instant(l.created)!, updated: instant(l.updated)!,
    revoked: instant(l.revoked) ?? null,
    // A record stored before device keys existed has none (LMDB: no field; PostgreSQL: an empty list).
    deviceKeys: deviceKeysOf(l),
  };
}

/** Whether the stored sealed key opens with this store's data key to the key of the record's hash. */
async function keyOpens(store: AsyncStore, l: LicenceRecord): Promise<boolean> {
  try {
    return licenceKeySha256(await store.licences.openKey(l)) === l.keySha256;
  } catch {
    return false;
  }
}
