// Activation codes in PostgreSQL, by the SHA-256 of the normalised code. Redeeming is part of the licence
// creation's transaction (./licences.ts): the code's row is locked, checked and marked used there, so of two
// nodes redeeming one code at once exactly one succeeds.
import { registrationVerdict, type ActivationCodeRecord, type RedeemCheck, type RegistrationClaim } from '../records';
import type { Plan } from '../../domain/accounts';
import type { AsyncActivationCodeRepository } from '../interfaces';
import { allRowsByKey } from './keyset';
import type { Db, Queryable } from './pool';
import { iso } from './rows';

interface CodeRow {
  code_id: string;
  plan: Plan;
  created: Date;
  expires: Date;
  used_at: Date | null;
  used_by_account: string | null;
  used_for_licence: string | null;
  purpose: 'licence' | 'registration';
  email: string | null;
}

const COLUMNS = 'code_id, plan, created, expires, used_at, used_by_account, used_for_licence, purpose, email';

function recordOf(r: CodeRow): ActivationCodeRecord {
  const record: ActivationCodeRecord = {
    codeId: r.code_id, plan: r.plan, created: iso(r.created), expires: iso(r.expires),
    used: r.used_at === null ? null : { at: iso(r.used_at), accountId: r.used_by_account ?? '', licenceId: r.used_for_licence ?? '' },
  };
  if (r.purpose === 'registration') record.purpose = 'registration';
  if (r.email !== null) record.email = r.email;
  return record;
}

export class PgActivationCodeRepository implements AsyncActivationCodeRepository {
  constructor(private readonly db: Db) {}

  async add(codeSha256: string, record: ActivationCodeRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(`INSERT INTO activation_codes
      (code_sha256, code_id, plan, created, expires, used_at, used_by_account, used_for_licence, purpose, email)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (code_sha256) DO NOTHING`,
    [codeSha256, record.codeId, record.plan, record.created, record.expires, record.used?.at ?? null,
      record.used?.accountId ?? null, record.used?.licenceId ?? null, record.purpose ?? 'licence', record.email ?? null]);
    return (rowCount ?? 0) > 0;
  }

  async claimForRegistration(codeSha256: string, email: string, accountId: string, now: Date, invitationOnly: boolean): Promise<RegistrationClaim> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<CodeRow>(`SELECT ${COLUMNS} FROM activation_codes WHERE code_sha256 = $1 FOR UPDATE`, [codeSha256]);
      const record = rows[0] ? recordOf(rows[0]) : undefined;
      const outcome = registrationVerdict(record, email, now, invitationOnly);
      if (outcome !== 'ok') return { outcome };
      const used = { at: now.toISOString(), accountId, licenceId: '' };
      await tx.query('UPDATE activation_codes SET used_at = $2, used_by_account = $3 WHERE code_sha256 = $1', [codeSha256, used.at, accountId]);
      return { outcome, record: { ...record!, used } };
    }, { retries: 2 });
  }

  async releaseRegistration(codeSha256: string, accountId: string): Promise<void> {
    await this.db.query(`UPDATE activation_codes SET used_at = NULL, used_by_account = NULL
      WHERE code_sha256 = $1 AND used_by_account = $2 AND purpose = 'registration'`, [codeSha256, accountId]);
  }

  async entries(): Promise<Array<{ codeSha256: string; record: ActivationCodeRecord }>> {
    const rows = await allRowsByKey<CodeRow & { code_sha256: string }>(this.db, 'activation_codes', `code_sha256, ${COLUMNS}`, ['code_sha256']);
    return rows.map((r) => ({ codeSha256: r.code_sha256, record: recordOf(r) }));
  }

  async list(): Promise<ActivationCodeRecord[]> {
    const { rows } = await this.db.query<CodeRow>(`SELECT ${COLUMNS} FROM activation_codes ORDER BY created, code_id`);
    return rows.map(recordOf);
  }
}

/**
 * Whether the code can be redeemed now by an account on `plan`, with its row locked until the transaction
 * ends (the same verdicts as the LMDB store's checkWithin). Only inside the licence-creating transaction.
 */
export async function checkCodeForUpdate(tx: Queryable, codeSha256: string, plan: Plan, now: Date): Promise<RedeemCheck> {
  const { rows } = await tx.query<CodeRow>(`SELECT ${COLUMNS} FROM activation_codes WHERE code_sha256 = $1 FOR UPDATE`, [codeSha256]);
  if (!rows[0] || rows[0].purpose === 'registration') return { outcome: 'unknown' };
  const record = recordOf(rows[0]);
  if (record.used) return { outcome: 'used', record };
  if (Date.parse(record.expires) <= now.getTime()) return { outcome: 'expired', record };
  if (record.plan !== plan) return { outcome: 'other-plan', record };
  return { outcome: 'ok', record };
}

/** Marks the code used; only in the transaction whose checkCodeForUpdate answered 'ok'. */
export async function markCodeUsed(tx: Queryable, codeSha256: string, used: NonNullable<ActivationCodeRecord['used']>): Promise<void> {
  await tx.query(`UPDATE activation_codes SET used_at = $2, used_by_account = $3, used_for_licence = $4
    WHERE code_sha256 = $1 AND used_at IS NULL`, [codeSha256, used.at, used.accountId, used.licenceId]);
}
