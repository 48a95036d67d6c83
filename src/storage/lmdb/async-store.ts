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

/** The methods `names` of `repo`, each answering with a promise (a synchronous read resolves at once). */
function promised<T extends object, K extends keyof T>(repo: T, names: readonly K[]): Promised<Pick<T, K>> {
  const view: Record<PropertyKey, unknown> = {};
  for (const name of names) {
    view[name] = async (...args: unknown[]) => (repo[name] as (...a: unknown[]) => unknown).apply(repo, args);
  }
  return view as Promised<Pick<T, K>>;
}

type Promised<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

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
  const acc = store.accounts;
  const lic = store.licences;
  const view: LmdbAsyncStore = {
    backend: 'lmdb',
    lmdb: store,
    persons,
    changes: persons.changes,
    apiKeys: promised(store.apiKeys, [
      'create', 'lookup', 'list', 'recordUse', 'revoke', 'isEmpty', 'entries', 'importEntry',
    ]),
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
    accounts: promised(acc, ['get', 'byEmail', 'create', 'update', 'list']),
    sessions: promised(store.sessions, ['create', 'get', 'touch', 'delete', 'deleteAllOf', 'purgeExpired', 'count']),
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
    activationCodes: promised(store.activationCodes, [
      'add', 'list', 'claimForRegistration', 'releaseRegistration', 'entries',
    ]),
    licenceUsage: promised(store.licenceUsage, [
      'add', 'range', 'day', 'entries', 'importCounts', 'reportEntries', 'importReports',
    ]),
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
