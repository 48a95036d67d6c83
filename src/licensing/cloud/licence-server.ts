// The licence server's check-in (POST /licence/v1/check): a device sends its licence key, its fingerprint, a
// fresh nonce, its version, its person count and the requests it answered since its last good check; it gets
// back the licence document signed with the cloud's service key, or a refusal saying what to fix. The first
// good check binds the licence to the device's fingerprint; another device is refused until the binding is
// released. A refused check records nothing, so the device keeps its usage for the next one. A device names
// its usage as a numbered report (usageReport: its store's series and the number); a number of that series
// and device added before is acknowledged without being added again (a resend after a lost answer).
import crypto from 'node:crypto';
import type { Config } from '../../config/types';
import { GRANTS, isGrant } from '../../domain/grants';
import type { ApiError, ErrorCatalog } from '../../errors';
import {
  licenceKeySha256, type LicenceRecord, MAX_DAY_REQUESTS, type UsageReportMark, type UsageRow,
} from '../../storage/records';
import type { AsyncStore } from '../../storage/interfaces';
import { DOCUMENT_FORMAT, signLicenceDocument, type LicenceDocument, type SignedLicence } from '../licence-document';
import { documentKeysOf } from './licence-device-keys';
import { implausibleUsage } from './usage-bounds';

export interface CheckRequest {
  licenceKey: string;
  fingerprint: string;
  nonce: string;
  version: string;
  persons: number;
  usage: UsageRow[];
  /** Absent from devices older than the numbered report: their usage is added at every accepted check. */
  usageReport?: { series: string; number: number };
}

/** What the package download and the device see of a key. */
export type LicenceKeyState = 'active' | 'unknown' | 'revoked' | 'expired';

export const LICENCE_KEY_PATTERN = '^fcl_[A-Za-z0-9_-]{32}$';
export const FINGERPRINT_PATTERN = '^[0-9a-f]{64}$';
export const NONCE_PATTERN = '^[A-Za-z0-9_-]{16,64}$';
export const REPORT_SERIES_PATTERN = '^[A-Za-z0-9_-]{16,64}$';
export const DAY_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';
export const MAX_VERSION_LENGTH = 64;
export const MAX_USAGE_ROWS = 400;
/** One day's requests of one operation (storage/licence-usage.ts says why). */
export const MAX_ROW_REQUESTS = MAX_DAY_REQUESTS;
const MAX_PERSONS = 1_000_000_000;

export interface LicenceServerDeps {
  config: Config;
  store: AsyncStore;
  errors: ErrorCatalog;
  now: () => Date;
}

export class LicenceServer {
  private signingKey?: Promise<crypto.KeyObject>;
  private readonly store: AsyncStore;

  constructor(private readonly deps: LicenceServerDeps) {
    this.store = deps.store;
  }

  /** Answers a check from `address`; throws the refusal's ApiError. */
  async check(body: unknown, address: string): Promise<SignedLicence> {
    const { config } = this.deps;
    const { store } = this;
    const request = this.checked(body);
    const keySha256 = licenceKeySha256(request.licenceKey);
    const now = this.deps.now();
    const at = now.toISOString();
    const outcome = await store.licences.checkIn<ApiError>(keySha256, (current) => {
      const refusal = this.refusal(current, now) ?? this.boundElsewhere(current, request.fingerprint)
        ?? this.implausible(current, request.usage, now);
      if (refusal) return { refuse: refusal };
      return {
        accept: {
          ...current,
          device: current.device ?? { fingerprint: request.fingerprint, boundAt: at },
          lastCheck: { at, address, version: request.version, persons: request.persons },
        },
      };
    }, request.usage, reportMark(request));
    if (outcome.outcome === 'missing') throw this.unknownKey();
    if (outcome.outcome === 'refused') throw outcome.reason;
    const licence = outcome.record;
    const validUntil = Math.min(now.getTime() + config.licensing.document_valid_seconds * 1000,
      licence.expires === null ? Infinity : Date.parse(licence.expires));
    const document: LicenceDocument = {
      format: DOCUMENT_FORMAT,
      licenceId: licence.licenceId,
      accountId: licence.accountId,
      label: licence.label,
      status: 'active',
      grants: licence.grants,
      limits: licence.limits,
      licenceExpires: licence.expires,
      device: { fingerprint: request.fingerprint },
      licenceKeySha256: keySha256,
      nonce: request.nonce,
      issued: at,
      checkIntervalSeconds: config.licensing.check_interval_seconds,
      validUntil: new Date(validUntil).toISOString(),
      deviceKeys: documentKeysOf(licence),
    };
    return signLicenceDocument(document, await this.privateKey());
  }

  /** The key's state for the package download (a key that could not check in gets no package either). */
  async keyState(licenceKey: string): Promise<LicenceKeyState> {
    const record = await this.store.licences.byKeySha256(licenceKeySha256(licenceKey));
    if (!record) return 'unknown';
    if (record.status === 'revoked') return 'revoked';
    if (this.expired(record, this.deps.now())) return 'expired';
    return 'active';
  }

  private refusal(licence: LicenceRecord, now: Date): ApiError | undefined {
    const { errors } = this.deps;
    if (licence.status === 'revoked') {
      return errors.explain('LicenceRevoked', `licence ${licence.licenceId} was revoked on ${(licence.revoked ?? licence.updated).slice(0, 10)}`);
    }
    if (this.expired(licence, now)) {
      return errors.explain('LicenceExpired', `licence ${licence.licenceId} expired on ${licence.expires}; its expiry can be extended in the back-office`);
    }
    return undefined;
  }

  private boundElsewhere(licence: LicenceRecord, fingerprint: string): ApiError | undefined {
    if (licence.device === null || licence.device.fingerprint === fingerprint) return undefined;
    return this.deps.errors.explain('LicenceBoundElsewhere',
      // Nothing of the bound device's fingerprint: a key holder learns only that another device holds it; the
      // operator sees which one in the back-office.
      `licence ${licence.licenceId} is bound to another device; release the binding in the back-office or with ` +
      `face-check licence release ${licence.licenceId}`);
  }

  private implausible(licence: LicenceRecord, usage: readonly UsageRow[], now: Date): ApiError | undefined {
    const why = implausibleUsage(usage, licence.created, now);
    return why === undefined ? undefined : this.deps.errors.explain('FieldsValidation', why);
  }

  private expired(licence: LicenceRecord, now: Date): boolean {
    return licence.expires !== null && Date.parse(licence.expires) <= now.getTime();
  }

  private unknownKey(): ApiError {
    return this.deps.errors.explain('LicenceKeyUnknown', 'this licence key is not known to the licence server (check the [licence] key of the device\'s ini)');
  }

  /** The service key's private half, parsed from its PEM once. */
  private privateKey(): Promise<crypto.KeyObject> {
    this.signingKey ??= this.store.serviceKeys.responseSigning().then((pair) => crypto.createPrivateKey(pair.privateKey));
    this.signingKey.catch(() => { this.signingKey = undefined; });
    return this.signingKey;
  }

  /** The body as a CheckRequest, or R_003 saying which field is wrong (the route's schema checks the same
   *  shapes first; this also holds for callers without it and checks what a schema cannot: real dates). */
  private checked(body: unknown): CheckRequest {
    const bad = (reason: string) => this.deps.errors.explain('FieldsValidation', reason);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('the body must be a JSON object');
    const b = body as Record<string, unknown>;
    const known = new Set(['licenceKey', 'fingerprint', 'nonce', 'version', 'persons', 'usage', 'usageReport']);
    for (const name of Object.keys(b)) if (!known.has(name)) throw bad(`unknown field ${name}`);
    const text = (name: string, pattern: string, what: string) => {
      const v = b[name];
      if (typeof v !== 'string' || !new RegExp(pattern).test(v)) throw bad(`${name}: ${what}`);
      return v;
    };
    const licenceKey = text('licenceKey', LICENCE_KEY_PATTERN, 'fcl_ and 32 base64url characters');
    const fingerprint = text('fingerprint', FINGERPRINT_PATTERN, '64 lower-case hex digits');
    const nonce = text('nonce', NONCE_PATTERN, '16 to 64 base64url characters');
    const version = b.version;
    if (typeof version !== 'string' || version.length > MAX_VERSION_LENGTH) throw bad(`version: a string of at most ${MAX_VERSION_LENGTH} characters`);
    const persons = b.persons;
    if (!Number.isSafeInteger(persons) || (persons as number) < 0 || (persons as number) > MAX_PERSONS) throw bad('persons: a whole number >= 0');
    if (!Array.isArray(b.usage) || b.usage.length > MAX_USAGE_ROWS) throw bad(`usage: a list of at most ${MAX_USAGE_ROWS} rows`);
    const usage = b.usage.map((row: unknown, i: number): UsageRow => {
      const r = row as Record<string, unknown> | null;
      if (typeof r !== 'object' || r === null || Object.keys(r).some((k) => !['day', 'operation', 'requests'].includes(k))) {
        throw bad(`usage[${i}]: {day, operation, requests}`);
      }
      if (typeof r.day !== 'string' || !isCalendarDay(r.day)) throw bad(`usage[${i}].day: a date YYYY-MM-DD`);
      if (typeof r.operation !== 'string' || !isGrant(r.operation)) throw bad(`usage[${i}].operation: one of ${GRANTS.join(', ')}`);
      if (!Number.isSafeInteger(r.requests) || (r.requests as number) < 0 || (r.requests as number) > MAX_ROW_REQUESTS) {
        throw bad(`usage[${i}].requests: a whole number from 0 to ${MAX_ROW_REQUESTS}`);
      }
      return { day: r.day, operation: r.operation, requests: r.requests as number };
    });
    const seen = new Set<string>();
    for (const [i, row] of usage.entries()) {
      const key = `${row.day} ${row.operation}`;
      if (seen.has(key)) throw bad(`usage[${i}]: a second row for ${row.day} and ${row.operation} (one row per day and operation)`);
      seen.add(key);
    }
    let usageReport: CheckRequest['usageReport'];
    if (b.usageReport !== undefined) {
      const r = b.usageReport as Record<string, unknown> | null;
      if (typeof r !== 'object' || r === null || Array.isArray(r) || Object.keys(r).some((k) => k !== 'series' && k !== 'number')) {
        throw bad('usageReport: {series, number}');
      }
      if (typeof r.series !== 'string' || !new RegExp(REPORT_SERIES_PATTERN).test(r.series)) throw bad('usageReport.series: 16 to 64 base64url characters');
      if (!Number.isSafeInteger(r.number) || (r.number as number) < 1) throw bad('usageReport.number: a whole number >= 1');
      usageReport = { series: r.series, number: r.number as number };
    }
    return { licenceKey, fingerprint, nonce, version, persons: persons as number, usage, ...(usageReport ? { usageReport } : {}) };
  }
}

/** The check's numbered report as the store keeps it (tied to the device that sent it), or undefined. */
function reportMark(request: CheckRequest): UsageReportMark | undefined {
  return request.usageReport && { fingerprint: request.fingerprint, ...request.usageReport };
}

/** YYYY-MM-DD naming a day that exists (not 2026-02-30). */
function isCalendarDay(day: string): boolean {
  if (!new RegExp(DAY_PATTERN).test(day)) return false;
  const d = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === day;
}
