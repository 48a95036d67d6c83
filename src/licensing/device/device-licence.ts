// The licence a device runs under, kept current while it runs. start() checks with the cloud before the
// device serves anything; afterwards the licence is checked again every checkIntervalSeconds of the last
// document (every min(interval, 30 s) after a failure), one check at a time. What each outcome does:
//   ok          - the new document rules at once (grants, limits, validUntil); the usage report it carried
//                 was acknowledged and is deleted (./licence-usage.ts);
//   refused     - (revoked, expired, unknown key, bound elsewhere) every gated request is refused at once,
//                 until a later check succeeds;
//   unreachable - the current document still rules, until its validUntil; then every gated request is
//   / invalid     refused with since when the licence could not be checked. An answer that fails
//                 verification is treated like no answer: whoever can forge one can as well block one.
import { EventEmitter } from 'node:events';
import type crypto from 'node:crypto';
import type { Grant, LicenceLimits } from '../../domain/grants';
import type { CheckOutcome, LicenceClient } from './licence-client';
import { deviceKeysChange, keyringOf } from './device-keyring';
import type { DocumentDeviceKey, LicenceDocument, SignedLicence } from '../licence-document';
import { LicenceUsage, MAX_USAGE_ENTRIES, type UsageStore } from './licence-usage';
import { graceDocument, storeDocument } from './stored-licence';

/** After a failed check the next comes this soon at most. */
export const RETRY_CAP_SECONDS = 30;
/** After a check whose report was full (usage left over from a long outage), the next comes this soon. */
const CATCH_UP_SECONDS = 1;
/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export type Permit = { ok: true } | { ok: false; reason: string };

/** Why a device did not start serving: 'unreachable' is worth retrying soon, the others need a person. */
export class LicenceStartError extends Error {
  constructor(readonly kind: 'unreachable' | 'refused' | 'invalid', message: string) {
    super(message);
    this.name = 'LicenceStartError';
  }
}

export interface LicenceStatus {
  state: 'starting' | 'licensed' | 'refused' | 'lapsed' | 'closed';
  licenceId?: string;
  grants: Grant[];
  limits?: LicenceLimits;
  /** Where the ruling document came from: a check, or the stored one at an offline start. */
  source?: 'check' | 'stored';
  servesUntil?: string;
  lastCheck?: { at: string; outcome: CheckOutcome['kind'] };
  failingSince?: string;
  lastFailure?: string;
  refusal?: { code: string; message: string; at: string };
}

export interface DeviceLicenceOptions {
  client: LicenceClient;
  /** For the stored document at an offline start: the same pins the client checks answers with. */
  publicKey: crypto.KeyObject;
  fingerprint: string;
  licenceKey: string;
  /** [licence] offline_grace_hours. */
  offlineGraceHours: number;
  /** Where the last verified document is kept (stored-licence.ts). */
  documentFile: string;
  /** Persons enrolled on the device (all accounts), reported with each check. */
  persons: () => number;
  /** Where answered requests are kept until the cloud acknowledged them: the device's store. */
  usage: UsageStore;
  now?: () => Date;
  /** State changes (refused, unreachable, lapsed, recovered), one line each. */
  log?: (line: string) => void;
}

interface RulingDocument {
  document: LicenceDocument;
  source: 'check' | 'stored';
  servesUntil: Date;
}

/** Emits 'check' (CheckOutcome) after each check has been applied. */
export class DeviceLicence extends EventEmitter {
  private readonly now: () => Date;
  private readonly log: (line: string) => void;
  private readonly usage: LicenceUsage;
  private readonly aborter = new AbortController();
  private current: RulingDocument | undefined;
  private refusal: { code: string; message: string; at: Date } | undefined;
  private failingSince: Date | undefined;
  private lastFailure: string | undefined;
  private lastCheck: { at: Date; outcome: CheckOutcome['kind'] } | undefined;
  private lapseLogged = false;
  private inFlight: Promise<CheckOutcome> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The last check's report filled a check: more usage waits. */
  private catchingUp = false;

  constructor(private readonly opts: DeviceLicenceOptions) {
    super();
    this.now = opts.now ?? (() => new Date());
    this.log = opts.log ?? (() => undefined);
    this.usage = new LicenceUsage(opts.usage, this.log);
  }

  /**
   * The first check; resolves once the device may serve, else throws LicenceStartError. With the cloud
   * unreachable and an offline grace, the stored document may stand in (stored-licence.ts).
   */
  async start(): Promise<void> {
    const outcome = await this.recheck();
    if (outcome.kind === 'ok') {
      this.log(`licence ${outcome.document.licenceId} checked with ${this.opts.client.serverUrl}: grants ${grantList(outcome.document.grants)}`);
      this.scheduleAfter(outcome);
      return;
    }
    if (outcome.kind === 'refused') throw new LicenceStartError('refused', `${outcome.message} (${outcome.code})`);
    if (outcome.kind === 'invalid') throw new LicenceStartError('invalid', outcome.reason);
    const cannot = `the licence server ${this.opts.client.serverUrl} cannot be reached: ${outcome.reason}`;
    const now = this.now();
    const stored = graceDocument(this.opts.documentFile, {
      publicKey: this.opts.publicKey, fingerprint: this.opts.fingerprint, licenceKey: this.opts.licenceKey,
      graceHours: this.opts.offlineGraceHours, now,
    });
    if (!stored.ok) throw new LicenceStartError('unreachable', this.opts.offlineGraceHours > 0 ? `${cannot}; ${stored.reason}` : cannot);
    this.current = { document: stored.document, source: 'stored', servesUntil: stored.servesUntil };
    this.log(`${cannot}; OFFLINE START on the stored licence document of ${stored.document.issued} ` +
      `(offline_grace_hours ${this.opts.offlineGraceHours}): serving until ${stored.servesUntil.toISOString()} unless a check succeeds`);
    this.scheduleAfter(outcome);
  }

  /** A check now, or the one already on its way: never two at once. */
  recheck(): Promise<CheckOutcome> {
    this.inFlight ??= this.runCheck().finally(() => { this.inFlight = undefined; });
    return this.inFlight;
  }

  /** Whether a request needing `grant` may be served now, and if not why (the 403's message). */
  allows(grant: Grant): Permit {
    const refused = this.refusedReason();
    if (refused) return { ok: false, reason: refused };
    const { document } = this.current!;
    if (!document.grants.includes(grant)) return { ok: false, reason: `licence ${document.licenceId} does not grant "${grant}"` };
    return { ok: true };
  }

  /** A device API key of the ruling document by the SHA-256 of the key (the Api-Key check); undefined when none. */
  apiKey(keySha256: string): DocumentDeviceKey | undefined {
    return this.current && keyringOf(this.current.document).get(keySha256);
  }

  /** Counts a request answered under `grant`; resolves once the count is in the store (send the answer then). */
  record(grant: Grant): Promise<void> {
    return this.usage.record(grant, this.now());
  }

  /** Answered requests the cloud has not acknowledged yet (the metrics' gauge). */
  unreportedRequests(): number {
    return this.usage.unreportedRequests();
  }

  /** The ruling document's limits; undefined before a document rules. */
  limits(): LicenceLimits | undefined {
    return this.current?.document.limits;
  }

  status(): LicenceStatus {
    const doc = this.current?.document;
    const iso = (d: Date | undefined) => d?.toISOString();
    let state: LicenceStatus['state'] = 'licensed';
    if (this.closed) state = 'closed';
    else if (this.refusal) state = 'refused';
    else if (!this.current) state = 'starting';
    else if (this.current.servesUntil.getTime() <= this.now().getTime()) state = 'lapsed';
    return {
      state, licenceId: doc?.licenceId, grants: doc ? [...doc.grants] : [], limits: doc?.limits, source: this.current?.source,
      servesUntil: iso(this.current?.servesUntil),
      lastCheck: this.lastCheck && { at: this.lastCheck.at.toISOString(), outcome: this.lastCheck.outcome },
      failingSince: iso(this.failingSince), lastFailure: this.lastFailure,
      refusal: this.refusal && { code: this.refusal.code, message: this.refusal.message, at: this.refusal.at.toISOString() },
    };
  }

  /**
   * Stops re-checking. With `reportWithinMs`, usage not yet acknowledged is first sent with one last check
   * (after a check already on its way), both cut off after that long; what the cloud did not acknowledge by
   * then stays in the store for the next start. Then a check still on its way is cut off and awaited.
   */
  async close(opts: { reportWithinMs?: number } = {}): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (opts.reportWithinMs && opts.reportWithinMs > 0 && this.current) {
      const cut = setTimeout(() => this.aborter.abort(), opts.reportWithinMs);
      try {
        await this.inFlight?.catch(() => undefined);
        await this.usage.flush();
        if (!this.aborter.signal.aborted && this.usage.unreported()) {
          const outcome = await this.recheck().catch((err: Error): CheckOutcome => ({ kind: 'unreachable', reason: err.message }));
          this.log(outcome.kind === 'ok'
            ? 'usage reported to the licence server at stop'
            : `usage could not be reported at stop (${outcome.kind === 'refused' ? outcome.message : outcome.reason}): it is kept in the store for the next start`);
        }
      } finally {
        clearTimeout(cut);
      }
    }
    this.aborter.abort();
    await this.inFlight?.catch(() => undefined);
  }

  private refusedReason(): string | undefined {
    if (this.refusal) {
      const which = this.current ? `licence ${this.current.document.licenceId}` : 'the licence';
      return `the licence server refused ${which} at ${this.refusal.at.toISOString()}: ${this.refusal.message} (${this.refusal.code})`;
    }
    if (!this.current) return 'the licence has not been checked yet';
    const { document, servesUntil } = this.current;
    if (this.now().getTime() < servesUntil.getTime()) return undefined;
    const since = this.failingSince ? `since ${this.failingSince.toISOString()}` : 'in time';
    const why = this.lastFailure ? ` (${this.lastFailure})` : '';
    const reason = `licence ${document.licenceId} could not be checked with the licence server ${since}${why}; ` +
      `its last document ran out at ${servesUntil.toISOString()}`;
    if (!this.lapseLogged) {
      this.lapseLogged = true;
      this.log(`${reason}: every operation is refused until a check succeeds`);
    }
    return reason;
  }

  private async runCheck(): Promise<CheckOutcome> {
    let report = await this.usage.report(this.now());
    const send = (numbered = true) => this.opts.client.check({
      persons: this.opts.persons(), usage: report?.usage ?? [],
      ...(report && numbered ? { usageReport: { series: report.series, number: report.number } } : {}),
    }, this.aborter.signal);
    let outcome = await send();
    if (report && refusedBody(outcome) && /usageReport/.test(outcome.reason)) {
      // A licence server older than the numbered report: the counts go the old way (a lost answer there may
      // count them twice; docs/licences.md).
      outcome = await send(false);
    }
    if (report && refusedBody(outcome)) {
      // The cloud believes no report whose days lie outside the licence's life (a board whose clock was
      // wrong when it counted): those counts are lost, not the licence.
      this.log(`the licence server refused this device's usage report (${outcome.reason}): it is dropped and the licence checked without it`);
      await this.usage.settle(report.number);
      report = undefined;
      outcome = await send();
    }
    // Acknowledged even when the device is closing: the cloud has added it.
    if (outcome.kind === 'ok' && report) await this.usage.settle(report.number);
    this.catchingUp = outcome.kind === 'ok' && report !== undefined && report.usage.length >= MAX_USAGE_ENTRIES;
    if (this.closed) return outcome;
    const at = this.now();
    this.lastCheck = { at, outcome: outcome.kind };
    switch (outcome.kind) {
      case 'ok': {
        const recovered = this.refusal !== undefined || this.failingSince !== undefined;
        const keysChange = deviceKeysChange(this.current?.document, outcome.document);
        this.current = { document: outcome.document, source: 'check', servesUntil: servesUntilOf(outcome.document) };
        this.refusal = this.failingSince = this.lastFailure = undefined;
        this.lapseLogged = false;
        this.keep(outcome.signed);
        if (recovered) this.log(`licence ${outcome.document.licenceId} checked again: grants ${grantList(outcome.document.grants)}`);
        if (keysChange) this.log(keysChange);
        break;
      }
      case 'refused':
        if (this.refusal?.code !== outcome.code && this.current) {
          this.log(`the licence server refused the licence: ${outcome.message} (${outcome.code}): every operation is refused`);
        }
        this.refusal = { code: outcome.code, message: outcome.message, at };
        break;
      default:
        if (!this.failingSince && this.current) {
          this.log(`licence check failed (${outcome.reason}): serving on the current document until ${this.current.servesUntil.toISOString()}`);
        }
        this.failingSince ??= at;
        this.lastFailure = outcome.reason;
    }
    this.emit('check', outcome);
    return outcome;
  }

  private keep(signed: SignedLicence): void {
    try {
      storeDocument(this.opts.documentFile, signed);
    } catch (err) {
      // Only an offline start would miss it; the running device is licensed either way.
      this.log(`cannot keep the licence document in ${this.opts.documentFile}: ${(err as Error).message}`);
    }
  }

  private scheduleAfter(outcome: CheckOutcome): void {
    if (this.closed) return;
    const interval = this.current?.document.checkIntervalSeconds ?? RETRY_CAP_SECONDS;
    let seconds = outcome.kind === 'ok' ? interval : Math.min(interval, RETRY_CAP_SECONDS);
    if (this.catchingUp) seconds = Math.min(seconds, CATCH_UP_SECONDS);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.recheck().then((next) => this.scheduleAfter(next), (err: Error) => {
        this.log(`licence check error: ${err.message}`);
        this.scheduleAfter({ kind: 'unreachable', reason: err.message });
      });
    }, Math.min(seconds * 1000, MAX_TIMER_MS));
    this.timer.unref();
  }
}

/** The cloud did not believe the check's body (R_003): with usage, its report. */
function refusedBody(outcome: CheckOutcome): outcome is Extract<CheckOutcome, { kind: 'invalid' }> {
  return outcome.kind === 'invalid' && outcome.code === 'R_003';
}

/** A document rules until its validUntil, and never past the licence's own expiry. */
function servesUntilOf(document: LicenceDocument): Date {
  const until = Date.parse(document.validUntil);
  const expires = document.licenceExpires === null ? Infinity : Date.parse(document.licenceExpires);
  return new Date(Math.min(until, expires));
}

function grantList(grants: readonly Grant[]): string {
  return grants.length ? grants.join(', ') : '(none)';
}
