// Operators' accounts: registration (the free test plan and its API key, spec 5), sign-in sessions, password
// changes, plans and quota, and the account's own API keys. Every rule lives here; the account API's routes
// and the CLI only check shapes and call in. Refusals are explained (errors.explain) so the operator learns
// what to fix.
import crypto from 'node:crypto';
import type { Config } from '../config/types';
import type { AccountRole, Operator, Plan } from '../domain/accounts';
import type { Role } from '../domain/roles';
import type { ApiError, ErrorCatalog } from '../errors';
import { requestsPerDayOf, utcDay } from '../services/quota';
import {
  type AccountRecord, type ApiKeyRecord, hashSessionToken, idleEndMs, type RegistrationClaim,
} from '../storage/records';
import type { AsyncStore, SharedSignInThrottle, ThrottleAttempt, ThrottleLimit } from '../storage/interfaces';
import { activationCodeSha256, normaliseActivationCode } from '../licensing/cloud/activation-codes';
import { passwordProblem } from './password-policy';
import { dummyVerify, hashPassword, verifyPassword } from './passwords';
import { ThrottleRules } from './sign-in-throttle';
import { signingKeyOf } from './signing-key-request';

export interface AccountServiceDeps {
  config: Config;
  store: AsyncStore;
  errors: ErrorCatalog;
  /** Injectable for tests (session expiry, the throttle's window, quota days). */
  now?: () => Date;
}

export interface AccountView {
  accountId: string;
  email: string;
  plan: Plan;
  role: AccountRole;
  created: string;
}

export interface QuotaView {
  /** 0 = unlimited. */
  requestsPerDay: number;
  usedToday: number;
  /** null when unlimited. */
  leftToday: number | null;
}

export interface AccountDetails extends AccountView {
  quota: QuotaView;
  persons: number;
}

/** An API key in clear: exists only in the answer that made it. */
export interface NewApiKey {
  keyId: string;
  key: string;
  role: Role;
  label: string;
}

export interface NewAccount {
  account: AccountView;
  apiKey: NewApiKey;
}

export interface Session {
  token: string;
  expires: string;
}

export interface ApiKeyView {
  keyId: string;
  role: Role;
  label: string;
  created: string;
  revoked: string | null;
  signing: boolean;
  lastUsed: string | null;
}

export interface KeyRequest {
  role: Role;
  label?: string;
  /** Make a signing key pair: the private half is answered once, never stored. */
  signing?: boolean;
  /** The client's own RSA public key (PEM) for request signing. */
  publicKey?: string;
}

export interface CreatedApiKey extends NewApiKey {
  created: string;
  signing: boolean;
  /** PKCS#8 PEM, when signing was asked for: shown once. */
  signingKey?: string;
  /** The service's public key that signs responses, when the key signs its requests. */
  servicePublicKey?: string;
}

export const FREE_PLAN_KEY_LABEL = 'free test plan';
export const MAX_EMAIL_LENGTH = 254;
export const MAX_PASSWORD_LENGTH = 1024;
/** fcs_ + 24 random bytes in base64url. */
const SESSION_TOKEN = /^fcs_[A-Za-z0-9_-]{32}$/;
/** One @, something on both sides, no spaces or control characters. */
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;
/** Expired sessions are swept on sign-in at most this often (no timer to stop). */
const PURGE_INTERVAL_MS = 10 * 60_000;

export class AccountService {
  private readonly config: Config;
  private readonly store: AsyncStore;
  private readonly errors: ErrorCatalog;
  private readonly now: () => Date;
  /** Counters in this process (LMDB) or shared by every node (PostgreSQL). */
  private readonly throttle: SharedSignInThrottle;
  /** Which counters each attempt is checked and counted against. */
  private readonly rules: ThrottleRules;
  private lastPurge = 0;

  constructor(deps: AccountServiceDeps) {
    this.config = deps.config;
    this.store = deps.store;
    this.errors = deps.errors;
    this.now = deps.now ?? (() => new Date());
    this.rules = new ThrottleRules(this.config.accounts);
    this.throttle = this.store.signInThrottle({
      maxFailures: this.config.accounts.sign_in_max_failures,
      windowMs: this.config.accounts.sign_in_lockout_minutes * 60_000,
      now: () => this.now().getTime(),
      // Events are pruned only past the longest window (registrations count for a day, failures for minutes).
      retentionMs: this.rules.retentionMs,
    });
  }

  /**
   * Self-registration, as [accounts] registration allows: open: anyone, on the free test plan; activation-code:
   * with a registration code an administrator issued (the account gets the code's plan); invitation: with the
   * code an administrator issued for this very address; closed: never (403). The free test plan's (or the
   * code's plan's) first API key is answered. Attempts that reach the e-mail address check are counted per
   * client address and network (./sign-in-throttle.ts), taken addresses included, so neither accounts nor
   * probes of which addresses are registered can be made at scale.
   */
  async register(email: string, password: string, clientAddress: string, activationCode?: string): Promise<NewAccount> {
    const mode = this.config.accounts.registration;
    if (mode === 'closed') {
      throw this.errors.explain('Forbidden', 'registration is closed on this service; ask its operators for an account');
    }
    const address = this.checkedEmail(email);
    this.checkPassword(password, address);
    let codeSha256: string | undefined;
    if (mode !== 'open') {
      const what = mode === 'invitation' ? 'the invitation code an administrator sent to this address' : 'a registration code from an administrator';
      if (activationCode === undefined || activationCode.trim() === '') {
        throw this.errors.explain('ActivationCodeRequired', `registration on this service needs ${what} (activationCode)`);
      }
      const normal = normaliseActivationCode(activationCode);
      if (!normal) throw this.errors.explain('ActivationCodeInvalid', 'expected a code like 7KQ2-M9XD-0T4B-HW3R');
      codeSha256 = activationCodeSha256(normal);
    }
    // An address locked out for guessing passwords does not get to spend hashing time on registrations either.
    await this.refuseIfThrottled([this.rules.signInAddress(clientAddress)]);
    await this.beginAttempt(this.rules.registration(clientAddress), 'too many registrations from this address or its network');
    const accountId = newAccountId();
    let plan: Plan = 'free';
    if (codeSha256) {
      const claim = await this.store.activationCodes.claimForRegistration(codeSha256, address, accountId, this.now(),
        mode === 'invitation');
      if (claim.outcome !== 'ok') throw this.errors.explain('ActivationCodeInvalid', registrationCodeRefusal(claim.outcome));
      plan = claim.record.plan;
    }
    try {
      return await this.createAccount(address, password, { plan, role: 'operator' }, accountId);
    } catch (err) {
      if (codeSha256) await this.store.activationCodes.releaseRegistration(codeSha256, accountId);
      throw err;
    }
  }

  /** An account made by the service's administrator (CLI), on any plan and role, registration open or not. */
  async createByAdministrator(email: string, password: string, opts: { plan: Plan; role: AccountRole }): Promise<NewAccount> {
    return this.createAccount(email, password, opts);
  }

  /**
   * A session for the right e-mail address and password. Throttled per (account, address) pair, per address
   * and, at addresses the account never signed in from, per account (./sign-in-throttle.ts): a guesser
   * elsewhere does not lock the owner out.
   */
  async signIn(email: string, password: string, clientAddress: string): Promise<Session> {
    const account = typeof email === 'string' && email.length <= MAX_EMAIL_LENGTH ? await this.store.accounts.byEmail(email) : undefined;
    const known = account ? await this.store.knownAddresses.isKnown(account.accountId, clientAddress) : false;
    const attempt = await this.beginAttempt(this.rules.signIn(email, clientAddress, known));
    const right = account && password.length <= MAX_PASSWORD_LENGTH
      ? await verifyPassword(password, account.passwordHash)
      : await dummyVerify(password.slice(0, MAX_PASSWORD_LENGTH));
    if (!account || !right) throw this.errors.explain('BadCredentials', 'check both and try again');
    await this.throttle.succeeded(attempt, this.rules.clearedBySignIn(email, clientAddress));
    const now = this.now();
    await this.store.knownAddresses.remember(account.accountId, clientAddress, now, this.config.accounts.known_addresses_per_account);
    await this.purgeExpiredSessions();
    const token = `fcs_${crypto.randomBytes(24).toString('base64url')}`;
    const expires = new Date(now.getTime() + this.config.accounts.session_max_hours * 3_600_000).toISOString();
    await this.store.sessions.create(hashSessionToken(token), {
      accountId: account.accountId, created: now.toISOString(), lastSeen: now.toISOString(), expires,
    });
    return { token, expires };
  }

  /** Ends the session; false when it had already ended. */
  async signOut(token: string): Promise<boolean> {
    return this.store.sessions.delete(hashSessionToken(token));
  }

  /** The signed-in operator of a session token; 401 explained when there is none (any more). */
  async operatorOf(token: string | undefined): Promise<Operator> {
    if (!token) throw this.errors.explain('Unauthorized', 'sign in first (Authorization: Bearer <session token>)');
    const tokenHash = SESSION_TOKEN.test(token) ? hashSessionToken(token) : undefined;
    const session = tokenHash ? await this.store.sessions.get(tokenHash) : undefined;
    if (!tokenHash || !session) throw this.errors.explain('Unauthorized', 'sign in first: the session token is unknown');
    const now = this.now();
    const idleEnd = idleEndMs(session.lastSeen, this.config.accounts.session_idle_minutes * 60_000);
    if (now.getTime() >= Date.parse(session.expires) || now.getTime() >= idleEnd) {
      await this.store.sessions.delete(tokenHash);
      throw this.errors.explain('Unauthorized', 'session expired; sign in again');
    }
    const account = await this.store.accounts.get(session.accountId);
    if (!account) throw this.errors.explain('Unauthorized', 'sign in first: the session\'s account no longer exists');
    await this.store.sessions.touch(tokenHash, now);
    return { accountId: account.accountId, email: account.email, role: account.role };
  }

  /**
   * Needs the current password; ends every other session of the account (`currentToken`'s stays). Never
   * refused by the sign-in throttle (a guesser's failures elsewhere must not keep the owner's open session
   * from changing the password); wrong current passwords are counted per session instead.
   */
  async changePassword(operator: Operator, currentToken: string, currentPassword: string, newPassword: string): Promise<void> {
    const sessionLimit = this.rules.passwordChange(hashSessionToken(currentToken));
    const attempt = await this.beginAttempt([sessionLimit]);
    const account = await this.store.accounts.get(operator.accountId);
    if (!account) throw this.errors.explain('Unauthorized', 'sign in first: the session\'s account no longer exists');
    const right = currentPassword.length <= MAX_PASSWORD_LENGTH && await verifyPassword(currentPassword, account.passwordHash);
    if (!right) throw this.errors.explain('BadCredentials', 'the current password is wrong');
    await this.throttle.succeeded(attempt, [sessionLimit.key]);
    this.checkPassword(newPassword, account.email);
    const passwordHash = await hashPassword(newPassword);
    const updated = this.now().toISOString();
    await this.store.accounts.update(account.accountId, (a) => ({ ...a, passwordHash, updated }));
    await this.store.sessions.deleteAllOf(account.accountId, hashSessionToken(currentToken));
  }

  /** Undefined when no account has that id. */
  async setPlan(accountId: string, plan: Plan): Promise<AccountView | undefined> {
    const updated = this.now().toISOString();
    const record = await this.store.accounts.update(accountId, (a) => ({ ...a, plan, updated }));
    return record && viewOf(record);
  }

  async list(): Promise<AccountView[]> {
    return (await this.store.accounts.list()).map(viewOf);
  }

  async quotaOf(accountId: string): Promise<QuotaView> {
    const requestsPerDay = requestsPerDayOf(this.config, await this.store.accounts.get(accountId));
    const usedToday = await this.store.quota.used(accountId, utcDay(this.now()));
    return { requestsPerDay, usedToday, leftToday: requestsPerDay === 0 ? null : Math.max(0, requestsPerDay - usedToday) };
  }

  /** Undefined when no account has that id. */
  async accountView(accountId: string): Promise<AccountDetails | undefined> {
    const record = await this.store.accounts.get(accountId);
    if (!record) return undefined;
    return { ...viewOf(record), quota: await this.quotaOf(accountId), persons: await this.store.persons.count(accountId) };
  }

  /** The account's API keys, revoked ones included (audit); never the keys themselves. */
  async listKeys(accountId: string): Promise<ApiKeyView[]> {
    return (await this.store.apiKeys.list()).filter((k) => k.accountId === accountId).map(keyViewOf);
  }

  async createKey(accountId: string, request: KeyRequest): Promise<CreatedApiKey> {
    const { publicKey, signingKey } = await signingKeyOf(request, this.errors);
    const { key, record } = await this.store.apiKeys.create(accountId, request.role, request.label ?? '',
      this.now().toISOString(), publicKey);
    const created: CreatedApiKey = {
      keyId: record.keyId, key, role: record.role, label: record.label, created: record.created, signing: Boolean(publicKey),
    };
    if (signingKey) created.signingKey = signingKey;
    if (publicKey) created.servicePublicKey = (await this.store.serviceKeys.responseSigning()).publicKey;
    return created;
  }

  /** Revokes one of the account's own keys. Another account's key is answered exactly like a missing one. */
  async revokeKey(accountId: string, keyId: string): Promise<ApiKeyView> {
    const own = (await this.store.apiKeys.list()).find((k) => k.keyId === keyId && k.accountId === accountId);
    if (!own) throw this.errors.explain('NotFoundRoute', `this account has no API key ${keyId}`);
    await this.store.apiKeys.revoke(keyId, this.now().toISOString(), accountId);
    const after = (await this.listKeys(accountId)).find((k) => k.keyId === keyId);
    return after ?? keyViewOf(own);
  }

  private async createAccount(email: string, password: string, opts: { plan: Plan; role: AccountRole }, accountId = newAccountId()): Promise<NewAccount> {
    const address = this.checkedEmail(email);
    this.checkPassword(password, address);
    const passwordHash = await hashPassword(password);
    const now = this.now().toISOString();
    const record: AccountRecord = {
      accountId, email: address, passwordHash, role: opts.role, plan: opts.plan, created: now, updated: now,
    };
    for (let first = true; ; first = false) {
      if (!first) record.accountId = newAccountId();
      const outcome = await this.store.accounts.create(record);
      if (outcome === 'created') break;
      if (outcome === 'email-taken') {
        throw this.errors.explain('EmailTaken', 'sign in, or register with another address');
      }
      // 'id-taken': 72 random bits collided; draw again.
    }
    const { key, record: keyRecord } = await this.store.apiKeys.create(record.accountId, 'full', FREE_PLAN_KEY_LABEL, now);
    return {
      account: viewOf({ ...record, email: address.toLowerCase() }),
      apiKey: { keyId: keyRecord.keyId, key, role: keyRecord.role, label: keyRecord.label },
    };
  }

  private checkedEmail(email: string): string {
    const address = email.trim();
    if (address.length > MAX_EMAIL_LENGTH) {
      throw this.errors.explain('FieldsValidation', `email: at most ${MAX_EMAIL_LENGTH} characters`);
    }
    if (!EMAIL.test(address)) {
      throw this.errors.explain('FieldsValidation', 'email: expected one address like name@example.com (one @, no spaces)');
    }
    return address;
  }

  /** A password being set (registration, change, an administrator's account): ./password-policy.ts. */
  private checkPassword(password: string, email: string): void {
    const problem = passwordProblem(password, { minLength: this.config.accounts.min_password_length, maxLength: MAX_PASSWORD_LENGTH }, { email });
    if (problem) throw this.errors.explain('FieldsValidation', `password: ${problem}`);
  }

  private async refuseIfThrottled(keys: ThrottleLimit[]): Promise<void> {
    const wait = await this.throttle.retryAfterSeconds(keys);
    if (wait > 0) throw this.throttled(wait);
  }

  /** Checks and counts the attempt in one step, so attempts sent at once (to any node) cannot all pass. */
  private async beginAttempt(keys: ThrottleLimit[], why?: string): Promise<ThrottleAttempt> {
    const outcome = await this.throttle.tryBegin(keys);
    if ('retryAfterSeconds' in outcome) throw this.throttled(outcome.retryAfterSeconds, why);
    return outcome.attempt;
  }

  private throttled(wait: number, why?: string): ApiError {
    const error: ApiError = this.errors.explain('SignInThrottled', `${why ? `${why}; ` : ''}try again in ${wait} seconds`);
    error.retryAfterSeconds = wait;
    return error;
  }

  private async purgeExpiredSessions(): Promise<void> {
    const now = this.now();
    if (Math.abs(now.getTime() - this.lastPurge) < PURGE_INTERVAL_MS) return;
    this.lastPurge = now.getTime();
    await this.store.sessions.purgeExpired(now, this.config.accounts.session_idle_minutes * 60_000);
  }
}

/** 72 random bits. */
function newAccountId(): string {
  return `acc_${crypto.randomBytes(9).toString('base64url')}`;
}

function registrationCodeRefusal(outcome: Exclude<RegistrationClaim['outcome'], 'ok'>): string {
  switch (outcome) {
    case 'unknown':
      return 'the code is not a registration code of this service (check it for typing errors)';
    case 'used':
      return 'the code was already used';
    case 'expired':
      return 'the code expired; ask for a new one';
    case 'other-address':
      return 'the invitation was sent to another e-mail address; register with that one';
    case 'not-invitation':
      return 'accounts on this service are by invitation: use the code sent to your e-mail address';
  }
}

function viewOf(record: AccountRecord): AccountView {
  return { accountId: record.accountId, email: record.email, plan: record.plan, role: record.role, created: record.created };
}

function keyViewOf(record: ApiKeyRecord): ApiKeyView {
  return {
    keyId: record.keyId, role: record.role, label: record.label, created: record.created, revoked: record.revoked,
    signing: Boolean(record.signingPublicKey), lastUsed: record.lastUsed ?? null,
  };
}
