// Activation codes: what an administrator gives an operator so the operator's account may add a licence
// (spec 1, step 2). A code is 80 random bits written as four groups of four Crockford base32 characters
// ("7KQ2-M9XD-0T4B-HW3R"): no I, L, O or U, so it reads aloud and types without confusion, and it is taken
// back case- and dash-insensitively, I and L read as 1 and O as 0. Only its hash is stored; the code is
// shown once, when issued.
import crypto from 'node:crypto';
import type { Plan } from '../../domain/accounts';
import type { AsyncActivationCodeRepository } from '../../storage/interfaces';
import type { ActivationCodeRecord, RedeemCheck } from '../../storage/records';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CODE_CHARACTERS = 16;
export const DEFAULT_CODE_VALID_DAYS = 30;

/** A fresh code, XXXX-XXXX-XXXX-XXXX (80 random bits). */
export function generateActivationCode(): string {
  let bits = BigInt(`0x${crypto.randomBytes(10).toString('hex')}`);
  let chars = '';
  for (let i = 0; i < CODE_CHARACTERS; i++) {
    chars = CROCKFORD[Number(bits & 31n)] + chars;
    bits >>= 5n;
  }
  return chars.match(/.{4}/g)!.join('-');
}

/** The code's canonical form (16 characters, no dashes), or undefined when it cannot be a code at all. */
export function normaliseActivationCode(text: string): string | undefined {
  const chars = text.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  if (chars.length !== CODE_CHARACTERS) return undefined;
  for (const c of chars) if (!CROCKFORD.includes(c)) return undefined;
  return chars;
}

/** What the store keeps of a code: SHA-256 (hex) of its canonical form. */
export function activationCodeSha256(normalised: string): string {
  return crypto.createHash('sha256').update(normalised, 'ascii').digest('hex');
}

/** The reason a code was refused, worded for the operator who typed it. */
export function activationCodeRefusal(check: Exclude<RedeemCheck, { outcome: 'ok' }>, accountPlan: Plan): string {
  switch (check.outcome) {
    case 'unknown':
      return 'the code is not recognised (check it for typing errors)';
    case 'used':
      return `the code was already used on ${day(check.record.used!.at)}`;
    case 'expired':
      return `the code expired on ${day(check.record.expires)}`;
    case 'other-plan':
      return `the code is for the ${check.record.plan} plan while this account is on the ${accountPlan} plan`;
  }
}

function day(iso: string): string {
  return iso.slice(0, 10);
}

export class ActivationCodes {
  constructor(private readonly codes: Pick<AsyncActivationCodeRepository, 'add'> & { list(): ActivationCodeRecord[] | Promise<ActivationCodeRecord[]> }) {}

  /**
   * A new code for accounts on `plan`, valid `validDays` from `now`; the code is returned in clear only here.
   * With `registration`, the code opens an account on `plan` instead ([accounts] registration =
   * activation-code | invitation); with its `email`, only that address may use it (an invitation).
   */
  async issue(plan: Plan, validDays: number, now: Date, registration?: { email?: string }): Promise<{ code: string; record: ActivationCodeRecord }> {
    if (!Number.isSafeInteger(validDays) || validDays < 1) throw new RangeError('an activation code is valid 1 day or more');
    for (;;) {
      const code = generateActivationCode();
      const sha256 = activationCodeSha256(normaliseActivationCode(code)!);
      const record: ActivationCodeRecord = {
        codeId: sha256.slice(0, 8), plan, created: now.toISOString(),
        expires: new Date(now.getTime() + validDays * 86_400_000).toISOString(), used: null,
      };
      if (registration) {
        record.purpose = 'registration';
        if (registration.email !== undefined) record.email = registration.email.trim().toLowerCase();
      }
      if (await this.codes.add(sha256, record)) return { code, record };
    }
  }

  async list(): Promise<ActivationCodeRecord[]> {
    return this.codes.list();
  }
}
