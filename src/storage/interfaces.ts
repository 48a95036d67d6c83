// The storage contract: what everything outside storage/ sees, whichever backend serves (LMDB: ./lmdb/,
// behind ./lmdb/async-store.ts; PostgreSQL: ./postgres/). One interface per repository, over the records of
// ./records.ts, every method returning a Promise, plus what one process keeps in memory and several nodes
// behind a load balancer must share: the request-signing replay cache, the sign-in throttle and small
// shared settings; and, at the end, what galleries kept beside an in-process store read from it.
//
// Left out on purpose: LMDB's storage migrations (moveInlineTemplates, sealPlainKeys, the template-row
// migration) and the *Within helpers that only run inside a LMDB write transaction (activation-code
// redemption and usage counting are part of LicenceRepository.create and checkIn here).
import type crypto from 'node:crypto';
import type {
  AccountPersonMeta, AccountRecord, ActivationCodeRecord, ApiKeyRecord, Change, ChangeOutcome, CreateOutcome,
  CreateResult, CreateRules, Decision, KeyUsageDay, KeyUsageEntry, LicenceRecord, LicenceUsageEntry,
  LicenceUsageReportEntry, NewLicence, PersonMeta, PersonRecord, QuotaEntry, RegistrationClaim, ServiceKeyPair,
  SessionRecord, TemplateBlock, TemplateInput, UsageReportMark, UsageRow,
} from './records';

import type { Grant } from '../domain/grants';
import type { Role } from '../domain/roles';
import type { SealedBatchOutcome } from './crypto/sealed-batch';


export interface AsyncPersonRepository {
  /** Who changed, in commit order (the same log as the store's `changes`). */
  readonly changes: AsyncChangeLog;
  /** The person without its template (existence checks, person responses). */
  meta(accountId: string, personId: string): Promise<(PersonMeta & { modelId: string }) | undefined>;
  get(accountId: string, personId: string): Promise<PersonRecord | undefined>;
  referenceImage(accountId: string, personId: string): Promise<Buffer | undefined>;
  /** Writes a new person unless the id exists (decided by the write itself: of two at once, one is created). */
  create(accountId: string, personId: string, input: TemplateInput, now: string): Promise<CreateResult>;
  /** Creates many persons of one account in one transaction; ids that exist are returned in `skipped`. */
  createMany(accountId: string, persons: ReadonlyArray<{ personId: string } & TemplateInput>, now: string):
    Promise<{ created: number; skipped: string[] }>;
  /** Replaces template and reference image; undefined when the person does not exist. */
  replace(accountId: string, personId: string, input: TemplateInput, now: string): Promise<PersonRecord | undefined>;
  /** Replaces only the template (reindex). */
  setTemplate(accountId: string, personId: string, modelId: string, template: Float32Array): Promise<boolean>;
  /** Deletes the person; returns what was deleted, undefined when absent. */
  remove(accountId: string, personId: string): Promise<PersonRecord | undefined>;
  /** Every person of every account, without templates (listing, reindex). */
  all(): AsyncIterable<AccountPersonMeta>;
  /** The stored templates of `personIds` in order, undefined where the account has no such person (re-rank). */
  templatesOf(accountId: string, personIds: readonly string[]): Promise<Array<Float32Array | undefined>>;
  /**
   * Every template of `modelId` (of one account when given), in blocks of one account (the gallery rebuild);
   * copy `bytes` before taking the next block.
   */
  templateBlocks(modelId: string, accountId?: string): AsyncIterable<TemplateBlock>;
  /** The accounts holding templates of `modelId`. */
  accountsWithTemplates(modelId: string): Promise<string[]>;
  /** Templates of `modelId` in the account: what its gallery must hold. */
  templateCount(modelId: string, accountId: string): Promise<number>;
  count(accountId?: string): Promise<number>;
}

/** Who changed, in commit order (src/storage/lmdb/change-log.ts): entries name a person, never its data. */
export interface AsyncChangeLog {
  /** The last committed sequence number; 0 before the first change. */
  lastChange(): Promise<number>;
  /** The sequence of the account's last change; 0 when it never changed. Kept however far the log is pruned. */
  accountHead(accountId: string): Promise<number>;
  oldestKept(): Promise<number | undefined>;
  /** True when every change after `seq` is still in the log, so a reader at `seq` can catch up by replaying. */
  covers(seq: number): Promise<boolean>;
  /** The changes after `seq`, oldest first (at most `limit`). */
  changesSince(seq: number, limit?: number): AsyncIterable<Change>;
  size(): Promise<number>;
  /** Deletes the oldest entries until at most `keep` remain; returns how many. */
  prune(keep: number): Promise<number>;
}

export interface AsyncApiKeyRepository {
  /** Creates a key and returns it in clear (the only time it exists in clear). */
  create(accountId: string, role: Role, label: string, now: string, signingPublicKey?: string):
    Promise<{ key: string; record: ApiKeyRecord }>;
  lookup(key: string): Promise<ApiKeyRecord | undefined>;
  list(): Promise<ApiKeyRecord[]>;
  /** Records a use at `now`, at most once a minute per key. */
  recordUse(key: string, now: Date): Promise<void>;
  revoke(keyId: string, now: string, accountId?: string): Promise<boolean>;
  isEmpty(): Promise<boolean>;
  /** Every key by the SHA-256 it is stored under (moving a store: face-check migrate). */
  entries(): Promise<Array<{ keySha256: string; record: ApiKeyRecord }>>;
  /** Stores a key moved from another store unless its hash is present; true when written. */
  importEntry(keySha256: string, record: ApiKeyRecord): Promise<boolean>;
}

/** Requests per UTC day by the kind of account (0 = unlimited): what [quota] and [plans] configure. */
export interface PlanLimits {
  /** An account without an AccountRecord ([quota] requests_per_day). */
  noRecord: number;
  free: number;
  paid: number;
}

/** The limit of an account on `plan` (undefined: no AccountRecord). PostgreSQL's meter makes the same choice in SQL. */
export function limitOfPlan(limits: PlanLimits, plan: string | undefined): number {
  return plan === undefined ? limits.noRecord : plan === 'paid' ? limits.paid : limits.free;
}

/** One metered request: the account's limit comes from its plan as stored now; `personId` asks for its meta too. */
export interface MeterRequest {
  accountId: string;
  day: string;
  limits: PlanLimits;
  personId?: string;
}

export interface MeterResult {
  /** The limit that applied (0 = unlimited: nothing counted, nothing written). */
  limit: number;
  /** False: the limit was reached, nothing counted (CP_005). */
  admitted: boolean;
  /** The asked person as stored when the request was counted; undefined when absent (or not asked). */
  person?: PersonMeta & { modelId: string };
}

export interface AsyncQuotaRepository {
  /** Counts one request unless `limit` is reached; false (nothing counted) when it is. Exact across nodes. */
  tryConsume(accountId: string, day: string, limit: number): Promise<boolean>;
  /**
   * The account's plan, the request counted against that plan's limit (exact across nodes, as tryConsume)
   * and, when asked, a person's meta: one statement in PostgreSQL, so a metered request costs one round trip
   * at most (none on a following node for an unlimited account whose plan and person it has cached).
   */
  meter(request: MeterRequest): Promise<MeterResult>;
  used(accountId: string, day: string): Promise<number>;
  /** Every counter (moving a store: face-check migrate). */
  entries(): Promise<QuotaEntry[]>;
  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  importCounts(entries: readonly QuotaEntry[]): Promise<number>;
}

export interface AsyncServiceKeyRepository {
  /** The response-signing key pair, made on first use (every node agrees on one). */
  responseSigning(): Promise<ServiceKeyPair>;
  /** Stores a pair moved from another store unless one is present; returns the pair stored now. */
  importResponseSigning(pair: ServiceKeyPair): Promise<ServiceKeyPair>;
}

export interface AsyncAccountRepository {
  get(accountId: string): Promise<AccountRecord | undefined>;
  byEmail(email: string): Promise<AccountRecord | undefined>;
  create(record: AccountRecord): Promise<'created' | 'email-taken' | 'id-taken'>;
  /** Applies `change` to the stored account, read and written in one transaction. */
  update(accountId: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord | undefined>;
  list(): Promise<AccountRecord[]>;
}

export interface AsyncSessionRepository {
  create(tokenHash: string, record: SessionRecord): Promise<void>;
  get(tokenHash: string): Promise<SessionRecord | undefined>;
  touch(tokenHash: string, now: Date): Promise<void>;
  delete(tokenHash: string): Promise<boolean>;
  deleteAllOf(accountId: string, exceptHash?: string): Promise<number>;
  purgeExpired(now: Date, idleMs: number): Promise<number>;
  count(): Promise<number>;
}

export interface AsyncLicenceRepository {
  /** Limit, activation code and write in one transaction: exact across nodes. */
  create(licence: NewLicence, rules: CreateRules): Promise<CreateOutcome>;
  get(licenceId: string): Promise<LicenceRecord | undefined>;
  byKeySha256(keySha256: string): Promise<LicenceRecord | undefined>;
  /** The licence key in clear, from its sealed copy. */
  openKey(record: LicenceRecord): Promise<string>;
  listByAccount(accountId: string): Promise<LicenceRecord[]>;
  list(): Promise<LicenceRecord[]>;
  update<R>(licenceId: string, decide: (current: LicenceRecord) => Decision<R>): Promise<ChangeOutcome<R>>;
  /** A device's check-in: decide, record, and add the usage (unless `report` was added before), in one transaction. */
  checkIn<R>(keySha256: string, decide: (current: LicenceRecord) => Decision<R>, usage: readonly UsageRow[],
    report?: UsageReportMark): Promise<ChangeOutcome<R>>;
  /**
   * Stores a licence moved from another store as it was there, `licenceKey` sealed under this store's data key
   * (face-check migrate); nothing is written when its id or key hash is present. True when written.
   */
  importRecord(record: LicenceRecord, licenceKey: string): Promise<boolean>;
}

export interface AsyncActivationCodeRepository {
  /** Stores a new code by its hash; false if that hash exists already. */
  add(codeSha256: string, record: ActivationCodeRecord): Promise<boolean>;
  list(): Promise<ActivationCodeRecord[]>;
  /** Checks a registration code for `email` (an invitation's, with `invitationOnly`) and marks it used by `accountId`, atomically. */
  claimForRegistration(codeSha256: string, email: string, accountId: string, now: Date, invitationOnly: boolean): Promise<RegistrationClaim>;
  /** Gives back a code `accountId` claimed but did not use (the account could not be made). */
  releaseRegistration(codeSha256: string, accountId: string): Promise<void>;
  /** Every code by the SHA-256 it is stored under (moving a store: `add` stores them, used or not). */
  entries(): Promise<Array<{ codeSha256: string; record: ActivationCodeRecord }>>;
}

export interface AsyncLicenceUsageRepository {
  add(licenceId: string, rows: readonly UsageRow[]): Promise<void>;
  range(licenceId: string, fromDay: string, toDay: string): Promise<UsageRow[]>;
  day(licenceId: string, day: string): Promise<Partial<Record<Grant, number>>>;
  /** Every counter (moving a store: face-check migrate). */
  entries(): Promise<LicenceUsageEntry[]>;
  /** Raises each counter to the moved count where it is lower, never lowers one; returns how many were written. */
  importCounts(entries: readonly LicenceUsageEntry[]): Promise<number>;
  /** Every licence's last numbered report (moving a store). */
  reportEntries(): Promise<LicenceUsageReportEntry[]>;
  /** Writes each moved mark where the target has none or the same device and series at a lower number; returns how many. */
  importReports(entries: readonly LicenceUsageReportEntry[]): Promise<number>;
}

export interface AsyncKeyUsageRepository {
  /**
   * Counts one request in memory. Deliberately not a Promise: the person API must not wait on a statistic;
   * the counts are written every few seconds (flush) and when the store closes.
   */
  record(keyId: string, at: Date): void;
  flush(): Promise<void>;
  /** Written counts plus this node's unwritten ones (other nodes' appear after their next flush). */
  range(keyId: string, fromDay: string, toDay: string): Promise<KeyUsageDay[]>;
  /** Every written counter (flush first), for moving a store. */
  entries(): Promise<KeyUsageEntry[]>;
  /** Raises each written counter to the moved count where it is lower, never lowers one; returns how many were written. */
  importCounts(entries: readonly KeyUsageEntry[]): Promise<number>;
  close(): Promise<void>;
}

/** Accepted request signatures (src/services/request-signing.ts), shared so a replay to another node is refused. */
export interface ReplayCache {
  /** Records the signature until `until`; false when it was accepted already and has not expired. */
  claim(signature: string, now: Date, until: Date): Promise<boolean>;
  /** Removes expired signatures; returns how many. */
  prune(now: Date): Promise<number>;
}

/** One sign-in attempt counted as a failure until it succeeds. */
export interface ThrottleAttempt {
  keys: readonly string[];
  at: number;
  /** The backend's handles of the failures it counted (taken back on success). */
  ids: readonly string[];
}

/** The sign-in throttle (./sign-in-throttle.ts counts, src/accounts/sign-in-throttle.ts names the keys), shared by every node. */
export interface SharedSignInThrottle {
  /** Seconds until an attempt on `keys` is allowed; 0 = now. */
  retryAfterSeconds(keys: readonly ThrottleKey[]): Promise<number>;
  /**
   * Checks and counts an attempt as one atomic step (so attempts sent to several nodes at once cannot all
   * pass the check): the attempt, or how long to wait.
   */
  tryBegin(keys: readonly ThrottleKey[]): Promise<{ attempt: ThrottleAttempt } | { retryAfterSeconds: number }>;
  /** The attempt was right: its failures are taken back, and the whole count of each of `clearKeys` ends. */
  succeeded(attempt: ThrottleAttempt, clearKeys: string | readonly string[]): Promise<void>;
}

/**
 * The client addresses an account signed in from, kept per account (the latest few) so that the sign-in
 * throttle's per-account back-off does not refuse the owner at an address they used before.
 */
export interface AsyncKnownAddressRepository {
  isKnown(accountId: string, address: string): Promise<boolean>;
  /** Records a successful sign-in from `address` at `at`; past `keep` addresses the least recent go. */
  remember(accountId: string, address: string, at: Date, keep: number): Promise<void>;
}

/** Small settings every node shares (e.g. the back-office CSRF secret). */
export interface SharedSettings {
  /** `bytes` random bytes made once for all nodes under `name`; sealed at rest. */
  secret(name: string, bytes: number): Promise<Buffer>;
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
}

/**
 * Where the person changes committed before an exclusive section began end, for its account: a node whose
 * gallery is filled by a change follower waits until it has applied them before it checks for duplicates.
 */
export interface ChangeFence {
  /** Sequence number of the account's last committed change (0: none). */
  seq: number;
}

/** What an exclusive section may use: its writes are part of the section (one transaction in PostgreSQL). */
export interface AccountScope {
  persons: AsyncPersonRepository;
  fence: ChangeFence;
  /** The account's last change this section wrote: set when the section commits (0 when it wrote none; LMDB: 0). */
  written: WrittenFence;
}

/** What an exclusive section wrote, once it committed. */
export interface WrittenFence extends ChangeFence {
  /** Its changes as a follower would read them (PostgreSQL; see OwnChanges), for its node's own follower. */
  own?: OwnChanges;
}

export interface AsyncStore {
  readonly persons: AsyncPersonRepository;
  /** Who changed, in commit order (every person write appends in its own transaction). */
  readonly changes: AsyncChangeLog;
  readonly apiKeys: AsyncApiKeyRepository;
  readonly quota: AsyncQuotaRepository;
  readonly serviceKeys: AsyncServiceKeyRepository;
  readonly accounts: AsyncAccountRepository;
  readonly sessions: AsyncSessionRepository;
  readonly licences: AsyncLicenceRepository;
  readonly activationCodes: AsyncActivationCodeRepository;
  readonly licenceUsage: AsyncLicenceUsageRepository;
  readonly keyUsage: AsyncKeyUsageRepository;
  readonly replayCache: ReplayCache;
  readonly settings: SharedSettings;
  readonly knownAddresses: AsyncKnownAddressRepository;
  /** A sign-in throttle over the shared counters. */
  signInThrottle(options: { maxFailures: number; windowMs: number; now: () => number; retentionMs?: number }): SharedSignInThrottle;
  /**
   * Runs `fn` exclusively for the account across every node: check-then-write rules (a free person_id, a face
   * not enrolled yet) hold under concurrent requests. Write persons through `scope.persons`.
   */
  exclusive<T>(accountId: string, fn: (scope: AccountScope) => Promise<T>): Promise<T>;
  /** Wraps the data key under a fresh key-encryption key written to `newKeyFile`; returns its path. */
  rotateKey(newKeyFile?: string): Promise<string>;
  /**
   * A key for files kept beside the store (gallery snapshots), derived from the data key (HKDF-SHA256 of
   * `purpose` and `salt`, as the LMDB store does). Not a Promise: it is computed, nothing is read.
   */
  deriveKey(purpose: string, salt: Uint8Array): crypto.KeyObject;
  close(): Promise<void>;
}

export type ChangeOp = 'create' | 'replace' | 'template' | 'remove';

export interface PersonChange extends Change {
  op: ChangeOp;
  /** The model of the template written (for a removal: of the template removed). */
  modelId: string;
  /** The database's clock at the append, just before the commit (ISO 8601). */
  at: string;
}

/**
 * A transaction's own changes, as a follower would have read them right after its commit, and the log's
 * last seq before them: a follower standing exactly at `after` may apply them without reading the log.
 */
export interface OwnChanges {
  after: number;
  changes: FollowedChange[];
}

/** A change as the follower reads it, with what the persons table holds now when asked for. */
export interface FollowedChange extends PersonChange {
  /** The person's current model, sealed template and meta; null when the person is gone. Absent unless asked for. */
  current?: { modelId: string; sealedTemplate: Buffer; created: Date; updated: Date } | null;
}

/** What a node's change feed does besides handing over batches (PostgreSQL: ./postgres/change-follower.ts). */
export interface ChangeFeedOptions {
  /** Deliver changes after this seq (lastChange() read before the gallery was built). */
  after: number;
  /** Applies one ordered batch; a throw means "not applied" and the batch comes again. */
  onChanges(batch: readonly FollowedChange[]): Promise<void>;
  /** Read each change with the person's current sealed template (FollowedChange.current), in the same query. */
  withTemplates?: boolean;
  /** The log no longer holds changes this feed missed: rebuild from the persons, return lastChange() read before. */
  onResync(): Promise<number>;
  /** Errors the feed handled itself (connection lost, callback failed), for the log. */
  onError?(err: unknown): void;
  /** Safety-net read interval when no notification comes; default 1000 ms. */
  pollIntervalMs?: number;
  /** Changes per batch at most; default 500. */
  batchSize?: number;
  /** First reconnect delay, doubled up to maxReconnectDelayMs; defaults 100 and 5000 ms. */
  reconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
}

export interface FollowerStats {
  /** Connections established after the first one. */
  reconnects: number;
  notifications: number;
  batches: number;
  delivered: number;
  resyncs: number;
  /** Changes delivered as their writer on this node offered them, without reading the log. */
  offered: number;
}

/** Where a change feed stands, for metrics. */
export interface FollowerStatus {
  /** The last seq delivered. */
  position: number;
  /** The highest seq known to be committed (read from the log or notified). */
  lastSeen: number;
  /** 0 when caught up; else seconds since it fell behind or, if later, since its last delivery. */
  lagSeconds: number;
  connected: boolean;
  stats: FollowerStats;
}

/** A store's changes handed, in order and at least once, to a node's galleries. */
export interface ChangeFeed {
  /** The last seq delivered. */
  readonly position: number;
  start(): Promise<void>;
  /** Resolves once every change up to `seq` was delivered; DatabaseUnavailableError past `timeoutMs`. */
  waitFor(seq: number, timeoutMs: number): Promise<void>;
  /** A section on this node committed these changes: delivered at once if nothing else came between. */
  offer(own: OwnChanges): void;
  status(): FollowerStatus;
  stop(): Promise<void>;
}

/** Opened templates of one account, `ids[i]`'s template at data[i * dimension …]. */
export interface OpenedTemplates {
  accountId: string;
  ids: string[];
  data: Float32Array;
  dimension: number;
  /** Call once the data has been copied (the index's load settled): its memory is reused. */
  release(): void;
}

/**
 * One account's templates still sealed, as a consumer that opens them where it keeps them takes them (the
 * index's loadSealed: no unsealed copy of the block). Row i, for ids[i], is sealed[sealedOffsets[i] …
 * sealedOffsets[i + 1]) with its additional data likewise.
 */
export interface SealedTemplateBlock {
  accountId: string;
  ids: string[];
  dimension: number;
  sealed: Uint8Array;
  sealedOffsets: Uint32Array;
  aad: Uint8Array;
  aadOffsets: Uint32Array;
  /** The raw data key: valid until the consumer's promise settles, wiped once the read is done. */
  key: Uint8Array;
}

/** Opens and keeps a block; resolves with the lowest row that did not open (failedRow -1: none, all kept). */
export type SealedBlockConsumer = (block: SealedTemplateBlock) => Promise<SealedBatchOutcome>;

/** What a shared store offers a node's start besides templateBlocks: every template read in bulk, and the feed's sealed rows opened. */
export interface BulkTemplateReader {
  /**
   * Every template of `modelId` handed to `onRows` in blocks of one account, or, with `openSealed` where the
   * store can, to it still sealed; resolves with the count, never a partial one.
   */
  copyTemplates(modelId: string, onRows: (rows: OpenedTemplates) => void, options?: { parts?: number; openSealed?: SealedBlockConsumer }): Promise<number>;
  /** A template as sealed in the store (FollowedChange.current), opened. */
  openTemplate(accountId: string, personId: string, modelId: string, sealed: Uint8Array): Float32Array;
  /** Persons whose template is of another model. */
  countOtherModels(modelId: string): Promise<number>;
}

/** One counter an attempt is checked and counted against: refused at `max` events within `windowMs`. */
export interface ThrottleLimit {
  key: string;
  max: number;
  windowMs: number;
}

/** A counter by name (the options' limit and window) or with its own limit. */
export type ThrottleKey = string | ThrottleLimit;

/** A key's limit: its own, or the options' for a key given by name. */
export function limitOf(key: ThrottleKey, defaults: { maxFailures: number; windowMs: number }): ThrottleLimit {
  return typeof key === 'string' ? { key, max: defaults.maxFailures, windowMs: defaults.windowMs } : key;
}

/**
 * What galleries kept beside an in-process store (LMDB) read from it without waiting: the start restores them
 * from snapshots and the change log (src/matching/snapshot/), and their indexes re-rank with stored templates.
 */
export interface LocalPersonRepository {
  readonly changes: LocalChangeLog;
  meta(accountId: string, personId: string): (PersonMeta & { modelId: string }) | undefined;
  templatesOf(accountId: string, personIds: readonly string[]): Array<Float32Array | undefined>;
  templateBlocks(modelId: string, accountId?: string): Iterable<TemplateBlock>;
  templateBlocksOf(modelId: string, accountIds: readonly string[]): Iterable<TemplateBlock>;
  accountsWithTemplates(modelId: string): string[];
  templateCount(modelId: string, accountId: string): number;
  count(accountId?: string): number;
}

/** The in-process change log (AsyncChangeLog's reads, answered at once), with one entry by its sequence. */
export interface LocalChangeLog {
  lastChange(): number;
  accountHead(accountId: string): number;
  at(seq: number): Change | undefined;
  covers(seq: number): boolean;
  changesSince(seq: number, limit?: number): Iterable<Change>;
  prune(keep: number): Promise<number>;
}

/** An in-process store's folder and keys, where its galleries' snapshots are kept and sealed. */
export interface LocalStore {
  readonly path: string;
  readonly persons: LocalPersonRepository;
  deriveKey(purpose: string, salt: Uint8Array): crypto.KeyObject;
  /** The data key as the key file wraps it (a snapshot carries it, so a start opens snapshots before the store). */
  dataKeyWrap(): Uint8Array | undefined;
}
