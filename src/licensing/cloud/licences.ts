// The licence section of an account (spec 1, licence set-up): add a licence (an activation code when the
// plan asks for one, within the plan's licence count), set its grants and limits, revoke it, release its
// device binding, read its usage, and show each licence line with its installation command. An operator
// reaches only the own account's licences: another account's licence is "not found", exactly like a missing
// one, so ids reveal nothing. The command line acts as administrator: any account, no code, no count.
// Changes answer the stored record and view() makes the licence line of it: the line's installation command
// needs the device package, which revoking or releasing must never wait for (or fail on).
import type { Config } from '../../config/types';
import type { Plan } from '../../domain/accounts';
import { parseGrants, type Grant, type LicenceLimits } from '../../domain/grants';
import type { ApiError, ErrorCatalog } from '../../errors';
import type { ChangeOutcome, LicenceRecord, NewLicence } from '../../storage/records';
import type { AsyncStore } from '../../storage/interfaces';
import { activationCodeRefusal, activationCodeSha256, normaliseActivationCode } from './activation-codes';
import { installCommand } from '../../install/install-command';
import type { InstallChoice } from '../../install/install-choice';
import { PackagePrebuildsMissing } from '../../install/package-file';
import { publicKeySha256 } from '../licence-document';

/** Whose licences a call may touch: one account's (an operator), or any (the administrator's CLI). */
export type LicenceScope = { accountId: string } | { anyAccount: true };

export interface LicenceInput {
  label?: string;
  /** Grant names, as a list or "identify,verify". */
  grants: string | readonly string[];
  maxPersons?: number | null;
  /** ISO 8601 (date or date-time), or null: no expiry. */
  expires?: string | null;
  activationCode?: string;
}

export type LicencePatch = Partial<Pick<LicenceInput, 'label' | 'grants' | 'maxPersons' | 'expires'>>;

/** A licence line as the account API and the back-office show it. */
export interface LicenceView {
  licenceId: string;
  label: string;
  status: 'active' | 'revoked';
  grants: Grant[];
  limits: LicenceLimits;
  expires: string | null;
  created: string;
  updated: string;
  licenceKey: string;
  /** null when the cloud cannot serve a package that installs without compiling: installUnavailable says why. */
  installCommand: string | null;
  installUnavailable?: string;
  device: null | { fingerprint: string; boundAt: string };
  lastCheck: null | { at: string; address: string; version: string; persons: number };
  usageToday: Partial<Record<Grant, number>>;
}

export interface LicenceUsageView {
  licenceId: string;
  from: string;
  to: string;
  /** Every day of the range, oldest first, with the requests per operation (zeros left out) and their total. */
  days: { day: string; requests: Partial<Record<Grant, number>>; total: number }[];
}

export interface LicenceServiceDeps {
  config: Config;
  store: AsyncStore;
  errors: ErrorCatalog;
  now: () => Date;
  /** The package the cloud serves devices: its SHA-256 (hex) and the lowest Node version it admits. */
  devicePackage: () => Promise<{ sha256: string; nodeMinimum: string }>;
  /** The cloud's address as devices reach it (./public-url.ts). */
  serverUrl: () => string;
}

export const MAX_LABEL_LENGTH = 100;
export const MAX_USAGE_DAYS = 400;
const MAX_PERSONS_LIMIT = 1_000_000_000;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

export class LicenceService {
  private publicKeyHash?: Promise<string>;
  private readonly store: AsyncStore;

  constructor(private readonly deps: LicenceServiceDeps) {
    this.store = deps.store;
  }

  /** Adds a licence to the account; `byAdministrator` (the CLI) needs no activation code and ignores the
   *  plan's licence count. */
  async create(accountId: string, input: LicenceInput, options: { byAdministrator?: boolean } = {}): Promise<LicenceView> {
    const { errors, config } = this.deps;
    const { store } = this;
    const account = await store.accounts.get(accountId);
    if (!account) throw errors.explain('FieldsValidation', `no account "${accountId}"`);
    const licence: NewLicence = {
      accountId,
      label: this.label(input.label ?? ''),
      grants: this.grants(input.grants),
      limits: { maxPersons: this.maxPersons(input.maxPersons ?? null) },
      expires: this.expires(input.expires ?? null),
    };
    const plan = account.plan;
    const codeText = input.activationCode?.trim() || undefined;
    if (this.codeRequiredOn(plan) && !codeText && !options.byAdministrator) {
      throw errors.explain('ActivationCodeRequired', `the ${plan} plan needs an activation code to add a licence (ask your provider for one)`);
    }
    // A code given where none is needed is still checked and used up: it was meant for this.
    let activationCode: { sha256: string; plan: Plan } | undefined;
    if (codeText) {
      const normalised = normaliseActivationCode(codeText);
      if (!normalised) throw errors.explain('ActivationCodeInvalid', activationCodeRefusal({ outcome: 'unknown' }, plan));
      activationCode = { sha256: activationCodeSha256(normalised), plan };
    }
    // What the licence line needs is fetched first: a package that cannot be made fails the creation, not its answer.
    await this.installInputs();
    const maxLicences = options.byAdministrator ? 0 : plan === 'free' ? config.plans.free_max_licences : config.plans.paid_max_licences;
    const outcome = await store.licences.create(licence, { now: this.deps.now(), maxLicences, activationCode });
    switch (outcome.outcome) {
      case 'limit-reached':
        throw errors.explain('LicenceLimitReached', `the ${plan} plan allows ${maxLicences} licence${maxLicences === 1 ? '' : 's'} ` +
          `(not revoked) and this account holds ${outcome.held}; revoke one${plan === 'free' ? ', or move to the paid plan' : ''}`);
      case 'code-refused':
        throw errors.explain('ActivationCodeInvalid', activationCodeRefusal(outcome.check, plan));
      case 'created':
        return this.view(outcome.record);
    }
  }

  /** Whether the account's plan needs an activation code to add a licence (the back-office shows the field). */
  async activationCodeRequired(accountId: string): Promise<boolean> {
    const account = await this.store.accounts.get(accountId);
    return account !== undefined && this.codeRequiredOn(account.plan);
  }

  async list(scope: LicenceScope): Promise<LicenceView[]> {
    const records = 'accountId' in scope ? await this.store.licences.listByAccount(scope.accountId) : await this.store.licences.list();
    return Promise.all(records.map((r) => this.view(r)));
  }

  /** The licence line; `choice` sets the camera and port its installation command sets up. */
  async get(scope: LicenceScope, licenceId: string, choice?: InstallChoice): Promise<LicenceView> {
    return this.view(await this.record(scope, licenceId), choice);
  }

  /** The licence record itself (for lists that show more than the view, e.g. the CLI's account column). */
  async record(scope: LicenceScope, licenceId: string): Promise<LicenceRecord> {
    const record = await this.store.licences.get(licenceId);
    if (!record || ('accountId' in scope && record.accountId !== scope.accountId)) {
      throw this.deps.errors.explain('LicenceNotFound', `no licence ${licenceId} in this account`);
    }
    return record;
  }

  /** Changes label, grants, limits or expiry; a revoked licence is refused (revoking is final). */
  async update(scope: LicenceScope, licenceId: string, patch: LicencePatch): Promise<LicenceRecord> {
    await this.record(scope, licenceId);
    const change: Partial<LicenceRecord> = {};
    if (patch.label !== undefined) change.label = this.label(patch.label);
    if (patch.grants !== undefined) change.grants = this.grants(patch.grants);
    if (patch.maxPersons !== undefined) change.limits = { maxPersons: this.maxPersons(patch.maxPersons) };
    if (patch.expires !== undefined) change.expires = this.expires(patch.expires);
    const now = this.deps.now().toISOString();
    return this.written(licenceId, await this.store.licences.update<ApiError>(licenceId, (current) =>
      current.status === 'revoked' ? { refuse: this.revokedError(current) } : { accept: { ...current, ...change, updated: now } }));
  }

  /** Revokes the licence for good: its device's next check is refused. Revoking again changes nothing. */
  async revoke(scope: LicenceScope, licenceId: string): Promise<LicenceRecord> {
    await this.record(scope, licenceId);
    const now = this.deps.now().toISOString();
    return this.written(licenceId, await this.store.licences.update<ApiError>(licenceId, (current) =>
      ({ accept: current.status === 'revoked' ? current : { ...current, status: 'revoked', revoked: now, updated: now } })));
  }

  /** Clears the device binding, so the next device to check in with the key binds (a replaced board). */
  async release(scope: LicenceScope, licenceId: string): Promise<LicenceRecord> {
    await this.record(scope, licenceId);
    const now = this.deps.now().toISOString();
    return this.written(licenceId, await this.store.licences.update<ApiError>(licenceId, (current) =>
      ({ accept: current.device === null ? current : { ...current, device: null, updated: now } })));
  }

  /** The requests the licence's device reported, per UTC day of the last `days` days (today included). */
  async usage(scope: LicenceScope, licenceId: string, days = 30): Promise<LicenceUsageView> {
    await this.record(scope, licenceId);
    if (!Number.isSafeInteger(days) || days < 1 || days > MAX_USAGE_DAYS) {
      throw this.deps.errors.explain('FieldsValidation', `days must be a whole number from 1 to ${MAX_USAGE_DAYS}`);
    }
    const today = Date.UTC(...utcDayParts(this.deps.now()));
    const dayOf = (i: number) => new Date(today - i * 86_400_000).toISOString().slice(0, 10);
    const from = dayOf(days - 1);
    const to = dayOf(0);
    const byDay = new Map<string, LicenceUsageView['days'][number]>();
    for (let i = days - 1; i >= 0; i--) byDay.set(dayOf(i), { day: dayOf(i), requests: {}, total: 0 });
    for (const row of await this.store.licenceUsage.range(licenceId, from, to)) {
      const entry = byDay.get(row.day);
      if (!entry) continue;
      entry.requests[row.operation] = row.requests;
      entry.total += row.requests;
    }
    return { licenceId, from, to, days: [...byDay.values()] };
  }

  /** The licence line: its key (from the sealed copy) and the command that installs it on a device. */
  async view(record: LicenceRecord, choice?: InstallChoice): Promise<LicenceView> {
    const { store } = this;
    const licenceKey = await store.licences.openKey(record);
    const install = await this.installInputs();
    const serverUrl = this.deps.serverUrl();
    return {
      licenceId: record.licenceId,
      label: record.label,
      status: record.status,
      grants: record.grants,
      limits: record.limits,
      expires: record.expires,
      created: record.created,
      updated: record.updated,
      licenceKey,
      ...('unavailable' in install
        ? { installCommand: null, installUnavailable: install.unavailable }
        : { installCommand: installCommand({ serverUrl, licenceKey, ...install, choice }) }),
      device: record.device,
      lastCheck: record.lastCheck,
      usageToday: await store.licenceUsage.day(record.licenceId, this.deps.now().toISOString().slice(0, 10)),
    };
  }

  /** A package without its prebuilds gets no command: the licence line says why instead. */
  private async installInputs(): Promise<{ packageSha256: string; publicKeySha256: string; nodeMinimum: string } | { unavailable: string }> {
    const [pkg, publicKeyHash] = await Promise.all([
      this.deps.devicePackage().catch((err: unknown) => {
        if (err instanceof PackagePrebuildsMissing) return err;
        throw err;
      }),
      this.publicKeySha256(),
    ]);
    if (pkg instanceof PackagePrebuildsMissing) return { unavailable: `No installation command: ${pkg.publicReason}.` };
    return { packageSha256: pkg.sha256, publicKeySha256: publicKeyHash, nodeMinimum: pkg.nodeMinimum };
  }

  private codeRequiredOn(plan: Plan): boolean {
    return plan === 'free' ? this.deps.config.plans.free_activation_code : this.deps.config.plans.paid_activation_code;
  }

  private publicKeySha256(): Promise<string> {
    this.publicKeyHash ??= this.store.serviceKeys.responseSigning().then((pair) => publicKeySha256(pair.publicKey));
    // A failed first read (the key being made) is tried again by the next view.
    this.publicKeyHash.catch(() => { this.publicKeyHash = undefined; });
    return this.publicKeyHash;
  }

  private written(licenceId: string, outcome: ChangeOutcome<ApiError>): LicenceRecord {
    if (outcome.outcome === 'missing') throw this.deps.errors.explain('LicenceNotFound', `no licence ${licenceId} in this account`);
    if (outcome.outcome === 'refused') throw outcome.reason;
    return outcome.record;
  }

  private revokedError(record: LicenceRecord): ApiError {
    return this.deps.errors.explain('LicenceRevoked',
      `licence ${record.licenceId} was revoked on ${(record.revoked ?? record.updated).slice(0, 10)}; revoking is final, add a new licence instead`);
  }

  private label(label: string): string {
    const trimmed = label.trim();
    if (trimmed.length > MAX_LABEL_LENGTH || /[\u0000-\u001f\u007f]/.test(trimmed)) {
      throw this.deps.errors.explain('FieldsValidation', `label: at most ${MAX_LABEL_LENGTH} characters, no control characters`);
    }
    return trimmed;
  }

  private grants(grants: string | readonly string[]): Grant[] {
    try {
      return parseGrants(grants);
    } catch (err) {
      throw this.deps.errors.explain('FieldsValidation', `grants: ${(err as Error).message}`);
    }
  }

  private maxPersons(value: number | null): number | null {
    if (value === null) return null;
    if (!Number.isSafeInteger(value) || value < 0 || value > MAX_PERSONS_LIMIT) {
      throw this.deps.errors.explain('FieldsValidation', `maxPersons: a whole number from 0 to ${MAX_PERSONS_LIMIT}, or null for no limit`);
    }
    return value;
  }

  private expires(value: string | null): string | null {
    if (value === null) return null;
    const at = ISO_DATE.test(value) ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(at)) throw this.deps.errors.explain('FieldsValidation', `expires: an ISO 8601 date or date-time (e.g. 2027-01-31 or 2027-01-31T12:00:00Z), got "${value}"`);
    if (at <= this.deps.now().getTime()) throw this.deps.errors.explain('FieldsValidation', `expires: ${value} is not in the future`);
    return new Date(at).toISOString();
  }
}

function utcDayParts(d: Date): [number, number, number] {
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}
