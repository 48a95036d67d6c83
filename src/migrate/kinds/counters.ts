// Counters: the licences' reported usage, the quota's metered requests per account and day (today's count
// carries over, so a move does not reset anyone's quota) and the API keys' usage statistics. A counter is
// raised to the source's count where the target's is lower and never lowered, so a re-run writes nothing and
// a count that grew on the source since the last run catches up.
import type { AsyncStore } from '../../storage/interfaces';
import { canonical, checksumsOf, type Checksums } from './checksum';
import { emptyCount, type CopyCount, type MovedKind } from './kind';

/** Scope of a counter whose licence or key the store does not hold (it still moves and is compared). */
export const UNKNOWN_OWNER = '(no owner)';

/** Counters written per call: one statement or transaction each, however many the store holds. */
const IMPORT_BATCH = 5_000;

/** Imports `entries` in batches; the count of those written and of those the target held already. */
async function importInBatches<E>(entries: readonly E[], importCounts: (batch: readonly E[]) => Promise<number>): Promise<CopyCount> {
  let written = 0;
  for (let i = 0; i < entries.length; i += IMPORT_BATCH) written += await importCounts(entries.slice(i, i + IMPORT_BATCH));
  return { ...emptyCount(), copied: written, present: entries.length - written };
}

export const LICENCE_USAGE: MovedKind = {
  name: 'licence usage',
  async copy(from, to) {
    return importInBatches(await from.licenceUsage.entries(), (batch) => to.licenceUsage.importCounts(batch));
  },
  async checksums(store): Promise<Checksums> {
    const owner = new Map((await store.licences.list()).map((l) => [l.licenceId, l.accountId]));
    return checksumsOf((await store.licenceUsage.entries()).map((e) => ({
      scope: owner.get(e.licenceId) ?? UNKNOWN_OWNER, key: `${e.licenceId} ${e.day} ${e.operation}`, content: canonical(e.requests),
    })));
  },
};

/** The last numbered usage report per licence: moved so that a device resending it to the new store is not added twice. */
export const LICENCE_USAGE_REPORTS: MovedKind = {
  name: 'licence usage reports',
  async copy(from, to) {
    return importInBatches(await from.licenceUsage.reportEntries(), (batch) => to.licenceUsage.importReports(batch));
  },
  async checksums(store): Promise<Checksums> {
    const owner = new Map((await store.licences.list()).map((l) => [l.licenceId, l.accountId]));
    return checksumsOf((await store.licenceUsage.reportEntries()).map(({ licenceId, ...mark }) => ({
      scope: owner.get(licenceId) ?? UNKNOWN_OWNER, key: licenceId, content: canonical(mark),
    })));
  },
};

export const QUOTA: MovedKind = {
  name: 'quota counters',
  async copy(from, to) {
    return importInBatches(await from.quota.entries(), (batch) => to.quota.importCounts(batch));
  },
  async checksums(store): Promise<Checksums> {
    return checksumsOf((await store.quota.entries()).map((e) => ({ scope: e.accountId, key: e.day, content: canonical(e.used) })));
  },
};

export const KEY_USAGE: MovedKind = {
  name: 'key usage',
  async copy(from, to) {
    await from.keyUsage.flush();
    return importInBatches(await from.keyUsage.entries(), (batch) => to.keyUsage.importCounts(batch));
  },
  async checksums(store): Promise<Checksums> {
    await store.keyUsage.flush();
    const owner = await keyOwners(store);
    return checksumsOf((await store.keyUsage.entries()).map((e) => ({
      scope: owner.get(e.keyId) ?? UNKNOWN_OWNER, key: `${e.keyId} ${e.day}`, content: canonical(e.requests),
    })));
  },
};

async function keyOwners(store: AsyncStore): Promise<Map<string, string>> {
  return new Map((await store.apiKeys.list()).map((k) => [k.keyId, k.accountId]));
}
