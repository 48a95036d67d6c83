// Activation codes an administrator hands out so an account can add a licence (spec 1: "An activation code
// is entered if required"). A code is stored only as the SHA-256 of its normalised text (src/licensing/
// activation-codes.ts normalises and hashes), so the database never holds a usable code. Redeeming runs
// inside the licence creation's write transaction (./licences.ts): LMDB serialises write transactions, so
// of two requests with one code exactly one finds it unused.
import type { Database, RootDatabase } from 'lmdb';
import type { Plan } from '../../domain/accounts';
import { type ActivationCodeRecord, type RedeemCheck, type RegistrationClaim, registrationVerdict } from '../records';

export const ACTIVATION_CODES_DB = 'activation-codes';

export class ActivationCodeRepository {
  private readonly db: Database<ActivationCodeRecord, string>;

  constructor(root: RootDatabase) {
    this.db = root.openDB<ActivationCodeRecord, string>({ name: ACTIVATION_CODES_DB });
  }

  /** Stores a new code by its hash; false if that hash exists already (a repeated random code: try again). */
  async add(codeSha256: string, record: ActivationCodeRecord): Promise<boolean> {
    return this.db.ifNoExists(codeSha256, () => { this.db.put(codeSha256, record); });
  }

  /** Reads whether the code can be redeemed now by an account on `plan`; call inside the write transaction
   *  that then calls markUsedWithin, so nothing can use the code in between. */
  checkWithin(codeSha256: string, plan: Plan, now: Date): RedeemCheck {
    const record = this.db.get(codeSha256);
    if (!record || record.purpose === 'registration') return { outcome: 'unknown' };
    if (record.used) return { outcome: 'used', record };
    if (Date.parse(record.expires) <= now.getTime()) return { outcome: 'expired', record };
    if (record.plan !== plan) return { outcome: 'other-plan', record };
    return { outcome: 'ok', record };
  }

  /** Marks the code used; only inside the write transaction whose checkWithin answered 'ok'. */
  markUsedWithin(codeSha256: string, record: ActivationCodeRecord, used: NonNullable<ActivationCodeRecord['used']>): void {
    this.db.put(codeSha256, { ...record, used });
  }

  /** Checks a registration code for `email` (an invitation's, with `invitationOnly`) and marks it used by
   *  `accountId` in one write transaction. */
  claimForRegistration(codeSha256: string, email: string, accountId: string, now: Date, invitationOnly: boolean): Promise<RegistrationClaim> {
    return this.db.transaction(() => {
      const record = this.db.get(codeSha256);
      const outcome = registrationVerdict(record, email, now, invitationOnly);
      if (outcome !== 'ok') return { outcome };
      const used = { ...record!, used: { at: now.toISOString(), accountId, licenceId: '' } };
      this.db.put(codeSha256, used);
      return { outcome, record: used };
    });
  }

  /** Gives back a code `accountId` claimed but did not use (the account could not be made). */
  releaseRegistration(codeSha256: string, accountId: string): Promise<void> {
    return this.db.transaction(() => {
      const record = this.db.get(codeSha256);
      if (record?.used?.accountId === accountId) this.db.put(codeSha256, { ...record, used: null });
    });
  }

  /** Every code by the SHA-256 it is stored under (moving a store: face-check migrate; add() stores them). */
  entries(): Array<{ codeSha256: string; record: ActivationCodeRecord }> {
    return [...this.db.getRange()].map(({ key, value }) => ({ codeSha256: key, record: value }));
  }

  list(): ActivationCodeRecord[] {
    return [...this.db.getRange()].map(({ value }) => value).sort((a, b) => a.created.localeCompare(b.created));
  }
}
