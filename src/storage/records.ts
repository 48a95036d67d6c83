// What the storage backends keep, whichever serves: the records the contract (./interfaces.ts) reads and
// writes, the places values are sealed under, and the small rules both backends apply alike.
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { AccountRole, Plan } from '../domain/accounts';
import type { Grant, LicenceLimits } from '../domain/grants';
import type { Role } from '../domain/roles';
import type { Sealer } from './crypto/sealer';
import type { DeviceKeyRecord } from './device-keys';

const generateKeyPair = promisify(crypto.generateKeyPair);

export interface AccountRecord {
  accountId: string;
  /** Lower-cased, trimmed. */
  email: string;
  /** scrypt$... (src/accounts/passwords.ts); never the password. */
  passwordHash: string;
  role: AccountRole;
  plan: Plan;
  created: string;
  updated: string;
}

export function normalisedEmail(email: string): string {
  return email.trim().toLowerCase();
}

export interface ActivationCodeRecord {
  /** First 8 hex digits of the code's hash: names the code in lists without revealing it. */
  codeId: string;
  /** The plan an account must be on to use the code. */
  plan: Plan;
  created: string;
  expires: string;
  used: null | { at: string; accountId: string; licenceId: string };
  /** 'registration': the code opens an account (on `plan`) instead of adding a licence; absent = licence. */
  purpose?: 'registration';
  /** An invitation: only this e-mail address (lower-cased) may register with the code. */
  email?: string;
}

/** Whether a registration code may open an account for an address now; it is marked used when 'ok'. */
export type RegistrationClaim =
  | { outcome: 'ok'; record: ActivationCodeRecord }
  | { outcome: 'unknown' | 'used' | 'expired' | 'other-address' | 'not-invitation' };

/** The verdict on a registration code (shared by both backends). */
export function registrationVerdict(record: ActivationCodeRecord | undefined, email: string, now: Date,
  invitationOnly: boolean): RegistrationClaim['outcome'] {
  if (!record || record.purpose !== 'registration') return 'unknown';
  if (invitationOnly && record.email === undefined) return 'not-invitation';
  if (record.used) return 'used';
  if (Date.parse(record.expires) <= now.getTime()) return 'expired';
  if (record.email !== undefined && record.email !== email.trim().toLowerCase()) return 'other-address';
  return 'ok';
}

/** Why a code cannot be redeemed (the service words the message), or 'ok'. */
export type RedeemCheck =
  | { outcome: 'ok'; record: ActivationCodeRecord }
  | { outcome: 'unknown' }
  | { outcome: 'used'; record: ActivationCodeRecord }
  | { outcome: 'expired'; record: ActivationCodeRecord }
  | { outcome: 'other-plan'; record: ActivationCodeRecord };

export interface ApiKeyRecord {
  /** Public identifier (first 12 hex digits of the hash), used to list and revoke. */
  keyId: string;
  accountId: string;
  role: Role;
  label: string;
  created: string;
  /** When revoked, else null. */
  revoked: string | null;
  /**
   * The client's RSA public key (PEM, SubjectPublicKeyInfo) for enterprise request signing (spec 5): when
   * set, every request made with this key must carry a valid Signature. Absent on keys made without one.
   */
  signingPublicKey?: string;
  /** Last successful authentication, to the minute (recordUse); absent until first used. */
  lastUsed?: string;
}

/** A key's last use is written at most this often: authentication must not cost a write per request. */
export const LAST_USED_INTERVAL_MS = 60_000;

export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a use of key `keyId` at `now` is written: at most once per LAST_USED_INTERVAL_MS per key and process. */
export function lastUseDue(written: Map<string, number>, keyId: string, now: Date): boolean {
  if (now.getTime() - (written.get(keyId) ?? -Infinity) < LAST_USED_INTERVAL_MS) return false;
  written.set(keyId, now.getTime());
  return true;
}

/** A fresh key: "fc_" + 32 base64url characters (192 random bits). */
export function generateKey(): string {
  return `fc_${crypto.randomBytes(24).toString('base64url')}`;
}

export interface Change {
  seq: number;
  accountId: string;
  personId: string;
}

export const FLUSH_INTERVAL_MS = 5_000;

export interface KeyUsageDay {
  day: string;
  requests: number;
}

/** One key's written count of one day (moving a store: face-check migrate). */
export interface KeyUsageEntry extends KeyUsageDay {
  keyId: string;
}

/**
 * The most requests of one operation one device can have answered in a day: a thousand a second, far above
 * any board, far below where a sum over every day and licence loses precision as a double. A day's counter
 * stops there however often it is reported, so every total stays an exact integer.
 */
export const MAX_REQUESTS_PER_SECOND = 1000;

export const MAX_DAY_REQUESTS = 86_400 * MAX_REQUESTS_PER_SECOND;

/** One reported count: requests answered for `operation` on UTC day `day` (YYYY-MM-DD). */
export interface UsageRow {
  day: string;
  operation: Grant;
  requests: number;
}

/** One licence's reported count of one day and operation (moving a store: face-check migrate). */
export interface LicenceUsageEntry extends UsageRow {
  licenceId: string;
}

/** A numbered report as a check-in names it: the device that sent it, its store's series and the number. */
export interface UsageReportMark {
  fingerprint: string;
  series: string;
  number: number;
}

/** Whether `report` was added already: the last report added for the licence came from the same device and series with a number not below it. */
export function reportAddedBefore(last: UsageReportMark | undefined, report: UsageReportMark): boolean {
  return last !== undefined && last.fingerprint === report.fingerprint && last.series === report.series && report.number <= last.number;
}

/** One licence's last numbered report (moving a store: face-check migrate). */
export interface LicenceUsageReportEntry extends UsageReportMark {
  licenceId: string;
}

/** Whether a moved mark replaces the target's: none there, or the same device and series at a lower number. */
export function movedReportReplaces(target: UsageReportMark | undefined, moved: UsageReportMark): boolean {
  return target === undefined || (target.fingerprint === moved.fingerprint && target.series === moved.series && target.number < moved.number);
}

export type LicenceStatus = 'active' | 'revoked';

export interface LicenceRecord {
  /** "lic_" + 16 hex digits. */
  licenceId: string;
  accountId: string;
  label: string;
  /** Revoking is final. */
  status: LicenceStatus;
  grants: Grant[];
  limits: LicenceLimits;
  /** ISO 8601, or null: no expiry. */
  expires: string | null;
  created: string;
  updated: string;
  revoked: string | null;
  /** SHA-256 (hex) of the licence key. */
  keySha256: string;
  /** The licence key, sealed (place: this database, licenceId). */
  sealedKey: Uint8Array;
  /** The device the licence is bound to (its first check), or null. */
  device: null | { fingerprint: string; boundAt: string };
  lastCheck: null | { at: string; address: string; version: string; persons: number };
  /** Keys the licensed device accepts (./device-keys.ts); absent on a record stored before they existed. */
  deviceKeys?: DeviceKeyRecord[];
}

/** What the creator chooses; the rest is made here. */
export type NewLicence = Pick<LicenceRecord, 'accountId' | 'label' | 'grants' | 'limits' | 'expires'>;

export interface CreateRules {
  now: Date;
  /** Licences not revoked the account may hold, this one included; 0 = no limit. */
  maxLicences: number;
  /** A code to redeem with this creation; it must be for `plan`. */
  activationCode?: { sha256: string; plan: Plan };
}

export type CreateOutcome =
  | { outcome: 'created'; record: LicenceRecord; licenceKey: string }
  | { outcome: 'limit-reached'; held: number }
  | { outcome: 'code-refused'; check: Exclude<RedeemCheck, { outcome: 'ok' }> };

/** A change's verdict on the current record: the record to write, or a refusal handed back as is. */
export type Decision<R> = { accept: LicenceRecord } | { refuse: R };

export type ChangeOutcome<R> =
  | { outcome: 'missing' }
  | { outcome: 'refused'; reason: R }
  | { outcome: 'written'; record: LicenceRecord };

export const LICENCES_DB = 'licences';

/** A fresh licence key: "fcl_" + 32 base64url characters (192 random bits). */
export function generateLicenceKey(): string {
  return `fcl_${crypto.randomBytes(24).toString('base64url')}`;
}

export function licenceKeySha256(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The moved record with its key sealed by `sealer`; a key that is not the record's is refused. */
export function movedLicence(record: LicenceRecord, licenceKey: string, sealer: Sealer): LicenceRecord {
  if (licenceKeySha256(licenceKey) !== record.keySha256) throw new Error(`licence ${record.licenceId}: the key does not match its hash`);
  const plain = Buffer.from(licenceKey, 'utf8');
  try {
    return { ...record, sealedKey: sealer.seal(LICENCES_DB, record.licenceId, plain) };
  } finally {
    plain.fill(0);
  }
}

/** `decide` on the current record: refused, or the record to write, keeping what ties it to its account and key. */
export function decidedLicence<R>(current: LicenceRecord, decide: (current: LicenceRecord) => Decision<R>): ChangeOutcome<R> {
  const decision = decide(current);
  if ('refuse' in decision) return { outcome: 'refused', reason: decision.refuse };
  const { licenceId, accountId, created, keySha256, sealedKey } = current;
  return { outcome: 'written', record: { ...decision.accept, licenceId, accountId, created, keySha256, sealedKey } };
}

/** One try at writing a new licence under a fresh id: refused, 'id-taken' (try another id) or 'created'. */
export type CreateAttempt = Exclude<CreateOutcome, { outcome: 'created' }> | 'id-taken' | 'created';

/**
 * A new licence with a fresh key, its id drawn again while `attempt` (the backend's one transaction: the
 * limit, the activation code and the write) finds it taken.
 */
export async function createLicence(licence: NewLicence, now: Date, sealer: Sealer,
  attempt: (record: LicenceRecord) => Promise<CreateAttempt>): Promise<CreateOutcome> {
  const licenceKey = generateLicenceKey();
  const at = now.toISOString();
  for (;;) {
    const licenceId = `lic_${crypto.randomBytes(8).toString('hex')}`;
    const record: LicenceRecord = {
      ...licence, licenceId, status: 'active', created: at, updated: at, revoked: null, keySha256: licenceKeySha256(licenceKey),
      sealedKey: sealer.seal(LICENCES_DB, licenceId, Buffer.from(licenceKey, 'utf8')),
      device: null, lastCheck: null,
    };
    const outcome = await attempt(record);
    if (outcome === 'created') return { outcome, record, licenceKey };
    if (outcome !== 'id-taken') return outcome;
  }
}

export interface PersonMeta {
  personId: string;
  /** ISO 8601 with milliseconds and Z. */
  created: string;
  updated: string;
}

export interface PersonRecord extends PersonMeta {
  modelId: string;
  /** L2-normalised embedding. */
  template: Float32Array;
}

/** A person of one account, without its template (listing, reindex). */
export interface AccountPersonMeta extends PersonMeta {
  accountId: string;
  modelId: string;
}

export type CreateResult = { created: true; person: PersonRecord } | { created: false };

export interface TemplateInput {
  modelId: string;
  template: Float32Array;
  /** The client's original image bytes. */
  referenceImage: Uint8Array;
}

export const IMAGES_DB = 'images';

/** One stored segment as the gallery rebuild reads it: ids and the float32 bytes as decrypted, not copied again. */
export interface TemplateBlock {
  accountId: string;
  ids: string[];
  dimension: number;
  /** ids.length x dimension float32 little-endian, at any byte offset; read it before taking the next block. */
  bytes: Uint8Array;
}

/** One account's metered requests on one UTC day (moving a store: face-check migrate). */
export interface QuotaEntry {
  accountId: string;
  day: string;
  used: number;
}

export interface ServiceKeyPair {
  /** PEM, PKCS#8. */
  privateKey: string;
  /** PEM, SubjectPublicKeyInfo. */
  publicKey: string;
  created: string;
}

export const SERVICE_KEYS_DB = 'service-keys';

/** A fresh RSA-2048 key pair, PEM (made off the event loop: it takes tens of milliseconds). */
export async function generateRsaKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  const { privateKey, publicKey } = await generateKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKey: String(privateKey), publicKey: String(publicKey) };
}

export interface SessionRecord {
  accountId: string;
  created: string;
  /** Last use, written at most once a second (TOUCH_INTERVAL_MS): a burst of requests costs one write. */
  lastSeen: string;
  /** The absolute end, whatever the use. */
  expires: string;
}

/** How stale lastSeen may get before a use writes it again. */
export const TOUCH_INTERVAL_MS = 1_000;

/**
 * When a session unused since `lastSeen` ends: idle expiry is exact to the second. lastSeen may lag the last
 * use by up to TOUCH_INTERVAL_MS, so that lag is added: a session never ends before `idleMs` unused, and at
 * most a second after.
 */
export function idleEndMs(lastSeen: string, idleMs: number): number {
  return Date.parse(lastSeen) + idleMs + TOUCH_INTERVAL_MS;
}

export function hashSessionToken(token: string): string {
  return crypto.createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Counts numbered for the cloud: it adds a series' number once, however often it is sent. */
export interface UsageReport {
  series: string;
  number: number;
  usage: UsageRow[];
  /** When the counts were moved out of pending (ISO 8601). */
  made: string;
}

/** What taking a report found: the report to send (none when nothing was counted) and pending rows dropped as too old. */
export interface TakenReport {
  report?: UsageReport;
  dropped: UsageRow[];
}
