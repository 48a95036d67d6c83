// Operators' accounts in PostgreSQL. The e-mail address (lower-cased, trimmed) is unique by a constraint, so
// of two registrations with one address on two nodes exactly one is created. Passwords only as their hash.
import { normalisedEmail, type AccountRecord } from '../records';
import type { AccountRole, Plan } from '../../domain/accounts';
import type { AsyncAccountRepository } from '../interfaces';
import type { MeterCaches } from './meter-caches';
import type { Db } from './pool';
import { iso } from './rows';

interface AccountRow {
  account_id: string;
  email: string;
  password_hash: string;
  role: AccountRole;
  plan: Plan;
  created: Date;
  updated: Date;
}

const COLUMNS = 'account_id, email, password_hash, role, plan, created, updated';

/**
 * LISTEN/NOTIFY channel of the table's writes, whoever makes them (schema 3's trigger); the payload is the
 * account id ('*': every account, after a TRUNCATE).
 */
export const ACCOUNT_CHANNEL = 'face_check_account_changes';

function recordOf(r: AccountRow): AccountRecord {
  return { accountId: r.account_id, email: r.email, passwordHash: r.password_hash, role: r.role, plan: r.plan,
    created: iso(r.created), updated: iso(r.updated) };
}

export class PgAccountRepository implements AsyncAccountRepository {
  /** `caches`: this node's cached plans, dropped as soon as this node has written an account (the others' by notification). */
  constructor(private readonly db: Db, private readonly caches?: MeterCaches) {}

  async get(accountId: string): Promise<AccountRecord | undefined> {
    const { rows } = await this.db.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts WHERE account_id = $1`, [accountId]);
    return rows[0] && recordOf(rows[0]);
  }

  async byEmail(email: string): Promise<AccountRecord | undefined> {
    const { rows } = await this.db.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts WHERE email = $1`, [normalisedEmail(email)]);
    return rows[0] && recordOf(rows[0]);
  }

  async create(record: AccountRecord): Promise<'created' | 'email-taken' | 'id-taken'> {
    const email = normalisedEmail(record.email);
    const { rowCount } = await this.db.query(`INSERT INTO accounts (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT DO NOTHING`,
    [record.accountId, email, record.passwordHash, record.role, record.plan, record.created, record.updated]);
    if (rowCount) {
      this.caches?.accountChanged(record.accountId);
      return 'created';
    }
    // A conflict: the address is reported first, as the LMDB store does.
    const { rows } = await this.db.query('SELECT 1 FROM accounts WHERE email = $1', [email]);
    return rows.length ? 'email-taken' : 'id-taken';
  }

  async update(accountId: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord | undefined> {
    const updated = await this.db.transaction(async (tx) => {
      const { rows } = await tx.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts WHERE account_id = $1 FOR UPDATE`, [accountId]);
      if (!rows[0]) return undefined;
      const current = recordOf(rows[0]);
      const next = { ...change(current), accountId, email: current.email };
      await tx.query(`UPDATE accounts SET password_hash = $2, role = $3, plan = $4, created = $5, updated = $6
        WHERE account_id = $1`, [accountId, next.passwordHash, next.role, next.plan, next.created, next.updated]);
      return next;
    });
    if (updated) this.caches?.accountChanged(accountId);
    return updated;
  }

  async list(): Promise<AccountRecord[]> {
    const { rows } = await this.db.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts ORDER BY created, account_id`);
    return rows.map(recordOf);
  }
}
