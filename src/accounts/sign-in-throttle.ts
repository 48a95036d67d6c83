// The throttle's rules for both storage backends: which counters an attempt is checked and counted against,
// and their limits. How a counter refuses (a sliding window) is ../storage/sign-in-throttle.ts's, also for
// both; each backend only keeps the events (in this process for LMDB, shared by every node in PostgreSQL).
//
// Sign-in throttles the guesser, not the owner:
// - failures per (account, client address) pair: sign_in_max_failures per lockout window refuses that pair;
// - failures per client address, whatever the accounts: sign_in_address_max_failures (one address spraying
//   many accounts);
// - failures per account from every address: sign_in_account_max_failures, a much higher back-off against a
//   guesser with many addresses, which does not apply at an address the account signed in from before
//   (known addresses, kept in the store per account: ../storage/known-addresses.ts). So failures made
//   elsewhere never lock the owner out of a known address, and a fresh address only after the account
//   limit, far above the pair's.
// A success takes its own attempt back and clears its pair's count; the account's count stays (an owner's
// success does not reset a guesser's budget).
//
// Registration counts every attempt that reaches the e-mail address check (made, or refused because the
// address is taken) per client address and per network (IPv4 /24, IPv6 /64): registrations_per_address and
// registrations_per_network per registration window. One client then opens a few free accounts a day, not
// dozens, and cannot probe which addresses are registered at scale.
//
// A password change is not a sign-in: the session already proved who it is, so the sign-in counters never
// refuse it. Wrong current passwords are counted per session (sign_in_max_failures per window), so a stolen
// session cannot guess the password either.
import type { AccountsConfig } from '../config/types';
import type { ThrottleLimit } from '../storage/interfaces';
import { clientNetwork } from './client-network';

type ThrottleSettings = Pick<AccountsConfig, 'sign_in_max_failures' | 'sign_in_address_max_failures' | 'sign_in_account_max_failures'
  | 'sign_in_lockout_minutes' | 'registrations_per_address' | 'registrations_per_network' | 'registration_window_hours'>;

function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

export class ThrottleRules {
  private readonly lockoutMs: number;
  private readonly registrationWindowMs: number;

  constructor(private readonly settings: ThrottleSettings) {
    this.lockoutMs = settings.sign_in_lockout_minutes * 60_000;
    this.registrationWindowMs = settings.registration_window_hours * 3_600_000;
  }

  /** The longest window of any counter: older events no longer count and may be pruned. */
  get retentionMs(): number {
    return Math.max(this.lockoutMs, this.registrationWindowMs);
  }

  /** The counters a sign-in to `email` from `address` is checked and counted against. */
  signIn(email: string, address: string, knownAddress: boolean): ThrottleLimit[] {
    const limits = [this.pair(email, address), this.address(address)];
    if (!knownAddress) limits.push({ key: `account:${emailKey(email)}`, max: this.settings.sign_in_account_max_failures, windowMs: this.lockoutMs });
    return limits;
  }

  /** The counters a successful sign-in clears: its pair's. */
  clearedBySignIn(email: string, address: string): string[] {
    return [this.pair(email, address).key];
  }

  /** Checked (not counted) before a registration: an address refused for guessing passwords does not register. */
  signInAddress(address: string): ThrottleLimit {
    return this.address(address);
  }

  /** The counters a registration from `address` is checked and counted against. */
  registration(address: string): ThrottleLimit[] {
    return [
      { key: `register-address:${address}`, max: this.settings.registrations_per_address, windowMs: this.registrationWindowMs },
      { key: `register-network:${clientNetwork(address)}`, max: this.settings.registrations_per_network, windowMs: this.registrationWindowMs },
    ];
  }

  /** The counter of wrong current passwords given by one session (by its token's hash). */
  passwordChange(sessionTokenHash: string): ThrottleLimit {
    return { key: `session:${sessionTokenHash}`, max: this.settings.sign_in_max_failures, windowMs: this.lockoutMs };
  }

  private pair(email: string, address: string): ThrottleLimit {
    return { key: `pair:${emailKey(email)}|${address}`, max: this.settings.sign_in_max_failures, windowMs: this.lockoutMs };
  }

  private address(address: string): ThrottleLimit {
    return { key: `address:${address}`, max: this.settings.sign_in_address_max_failures, windowMs: this.lockoutMs };
  }
}
