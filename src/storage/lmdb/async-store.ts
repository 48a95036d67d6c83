// The LMDB store (./store.ts) behind the asynchronous storage interface (../interfaces.ts) that the
// services use whichever backend serves them: synchronous reads become resolved promises, writes are
// LMDB's own, the account lock is the in-process one, and what a cluster shares in its database is kept in
// this process (./in-process-shared.ts). The LMDB store stays reachable (`lmdb`) for what only it has: the
// gallery snapshots and the storage migrations.
import {
  type AccountScope, type AsyncChangeLog, type AsyncPersonRepository, type AsyncStore, limitOfPlan,
} from '../interfaces';
import type { ChangeLog } from './change-log';
import type { PersonRepository } from './persons';
import type { Store } from './store';
import { InProcessSettings } from './in-process-shared';
import { InProcessThrottleEvents } from './sign-in-throttle';
import { SignInThrottle } from '../sign-in-throttle';

export interface LmdbAsyncStore extends AsyncStore {
  readonly backend: 'lmdb';
  /** The wrapped store (galleries, snapshots, migrations). */
  readonly lmdb: Store;
}

function asyncChanges(log: ChangeLog): AsyncChangeLog {
  return {
    lastChange: async () => log.lastChange(),
    accountHead: async (accountId) => log.accountHead(accountId),
    oldestKept: async () => log.oldestKept(),
    covers: async (seq) => log.covers(seq),
    changesSince: (seq, limit) => toAsync(log.changesSince(seq, limit)),
    size: async () => log.size(),
    prune: (keep) => log.prune(keep),
  };
}

async function* toAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  yield* items;
}

function asyncPersons(persons: PersonRepository): AsyncPersonRepository {
  return {
    changes: asyncChanges(persons.changes),
    meta: async (accountId, personId) => persons.meta(accountId, personId),
    get: async (accountId, personId) => persons.get(accountId, personId),
    referenceImage: async (accountId, personId) => persons.referenceImage(accountId, personId),
    create: (accountId, personId, input, now) => persons.create(accountId, personId, input, now),
    createMany: async (accountId, list, now) => {
      const skipped: string[] = [];
      let created = 0;
      for (const { personId, ...input } of list) {
        if ((await persons.create(accountId, personId, input, now)).created) created++;
        else skipped.push(personId);
      }
      return { created, skipped };
    },
    replace: (accountId, personId, input, now) => persons.replace(accountId, personId, input, now),
    setTemplate: (accountId, personId, modelId, template) => persons.setTemplate(accountId, personId, modelId, template),
    remove: (accountId, personId) => persons.remove(accountId, personId),
    all: () => toAsync(persons.all()),
    templatesOf: async (accountId, personIds) => persons.templatesOf(accountId, personIds),
    // Each block is copied: LMDB's block is a view of its read buffer, and an async consumer reads it later.
    templateBlocks: (modelId, accountId) => toAsync(copiedBlocks(persons, modelId, accountId)),
    accountsWithTemplates: async (modelId) => persons.accountsWithTemplates(modelId),
    templateCount: async (modelId, accountId) => persons.templateCount(modelId, accountId),
    count: async (accountId) => persons.count(accountId),
  };
}

function* copiedBlocks(persons: PersonRepository, modelId: string, accountId?: string) {
  for (const block of persons.templateBlocks(modelId, accountId)) yield { ...block, bytes: Uint8Array.from(block.bytes) };
}

const wrapped = new WeakMap<Store, LmdbAsyncStore>();

/**
 * The asynchronous view of `store`: one per store, so everything serving that store shares one replay cache
 * and one set of settings. Closing it closes the store.
 */
export function lmdbAsyncStore(store: Store): LmdbAsyncStore {
  const existing = wrapped.get(store);
  if (existing) return existing;
  const persons = asyncPersons(store.persons);
  const a = store.apiKeys;
  const acc = store.accounts;
  const ses = store.sessions;
  const lic = store.licences;
  const usage = store.licenceUsage;
  const view: LmdbAsyncStore = {
    backend: 'lmdb',
    lmdb: store,
    persons,
    changes: persons.changes,
    apiKeys: {
      create: (accountId, role, label, now, signingPublicKey) => a.create(accountId, role, label, now, signingPublicKey),
      lookup: async (key) => a.lookup(key),
      list: async () => a.list(),
      recordUse: (key, now) => a.recordUse(key, now),
      revoke: (keyId, now, accountId) => a.revoke(keyId, now, accountId),
      isEmpty: async () => a.isEmpty(),
      entries: async () => a.entries(),
      importEntry: (keySha256, record) => a.importEntry(keySha256, record),
    },
    quota: {
      tryConsume: (accountId, day, limit) => store.quota.tryConsume(accountId, day, limit),
      // LMDB's reads cost no round trip: the plan and the person are read beside the counter's transaction.
      meter: async ({ accountId, day, limits, personId }) => {
        const plan = acc.get(accountId)?.plan;
        const limit = limitOfPlan(limits, plan);
        const admitted = limit === 0 || await store.quota.tryConsume(accountId, day, limit);
        const person = admitted && personId !== undefined ? store.persons.meta(accountId, personId) : undefined;
        return person ? { limit, admitted, person } : { limit, admitted };
      },
      used: async (accountId, day) => store.quota.used(accountId, day),
      entries: async () => store.quota.entries(),
      importCounts: (entries) => store.quota.importCounts(entries),
    },
    serviceKeys: {
      responseSigning: () => store.serviceKeys.responseSigning(),
      importResponseSigning: (pair) => store.serviceKeys.importResponseSigning(pair),
    },
    accounts: {
      get: async (accountId) => acc.get(accountId),
      byEmail: async (email) => acc.byEmail(email),
      create: (record) => acc.create(record),
      update: (accountId, change) => acc.update(accountId, change),
      list: async () => acc.list(),
    },
    sessions: {
      create: (tokenHash, record) => ses.create(tokenHash, record),
      get: async (tokenHash) => ses.get(tokenHash),
      touch: (tokenHash, now) => ses.touch(tokenHash, now),
      delete: (tokenHash) => ses.delete(tokenHash),
      deleteAllOf: (accountId, exceptHash) => ses.deleteAllOf(accountId, exceptHash),
      purgeExpired: (now, idleMs) => ses.purgeExpired(now, idleMs),
      count: async () => ses.count(),
    },
    licences: {
      create: (licence, rules) => lic.create(licence, rules),
      get: async (licenceId) => lic.get(licenceId),
      byKeySha256: async (keySha256) => lic.byKeySha256(keySha256),
      openKey: async (record) => lic.openKey(record),
      listByAccount: async (accountId) => lic.listByAccount(accountId),
      list: async () => lic.list(),
      update: (licenceId, decide) => lic.update(licenceId, decide),
      checkIn: (keySha256, decide, rows, report) => lic.checkIn(keySha256, decide, rows, report),
      importRecord: (record, licenceKey) => lic.importRecord(record, licenceKey),
    },
    activationCodes: {
      add: (codeSha256, record) => store.activationCodes.add(codeSha256, record),
      list: async () => store.activationCodes.list(),
      claimForRegistration: (codeSha256, email, accountId, now, invitationOnly) =>
        store.activationCodes.claimForRegistration(codeSha256, email, accountId, now, invitationOnly),
      releaseRegistration: (codeSha256, accountId) => store.activationCodes.releaseRegistration(codeSha256, accountId),
      entries: async () => store.activationCodes.entries(),
    },
    licenceUsage: {
      add: (licenceId, rows) => usage.add(licenceId, rows),
      range: async (licenceId, from, to) => usage.range(licenceId, from, to),
      day: async (licenceId, day) => usage.day(licenceId, day),
      entries: async () => usage.entries(),
      importCounts: (entries) => usage.importCounts(entries),
      reportEntries: async () => usage.reportEntries(),
      importReports: (entries) => usage.importReports(entries),
    },
    keyUsage: store.keyUsage,
    replayCache: store.requestSignatures,
    settings: new InProcessSettings(),
    knownAddresses: {
      isKnown: async (accountId, address) => store.knownAddresses.isKnown(accountId, address),
      remember: async (accountId, address, at, keep) => { await store.knownAddresses.remember(accountId, address, at, keep); },
    },
    signInThrottle: (o) => new SignInThrottle(new InProcessThrottleEvents({ retentionMs: o.retentionMs ?? o.windowMs }), o),
    // The fence names the last change, for the gallery feed to reach before a duplicate search; `written`
    // stays 0: a section's writes commit as it runs, so the feed then catches up with every change.
    exclusive: (accountId, fn) => store.exclusive(accountId, () => {
      const scope: AccountScope = { persons, fence: { seq: store.changes.lastChange() }, written: { seq: 0 } };
      return fn(scope);
    }),
    rotateKey: (newKeyFile) => store.rotateKey(newKeyFile),
    deriveKey: (purpose, salt) => store.deriveKey(purpose, salt),
    close: () => store.close(),
  };
  wrapped.set(store, view);
  return view;
}
