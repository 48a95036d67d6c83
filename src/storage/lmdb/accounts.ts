// Operators' accounts. An account owns API keys, persons and licences (all filed under its accountId). The
// e-mail address is unique (compared lower-cased) through a second database that maps it to the account; the
// password is stored only as its memory-hard hash (src/accounts/passwords.ts makes and checks it).
import type { Database, RootDatabase } from 'lmdb';
import { type AccountRecord, normalisedEmail } from '../records';

export class AccountRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<AccountRecord, string>;
  private readonly byEmailDb: Database<string, string>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.db = root.openDB<AccountRecord, string>({ name: 'accounts' });
    this.byEmailDb = root.openDB<string, string>({ name: 'account-emails' });
  }

  get(accountId: string): AccountRecord | undefined {
    return this.db.get(accountId);
  }

  byEmail(email: string): AccountRecord | undefined {
    const id = this.byEmailDb.get(normalisedEmail(email));
    return id === undefined ? undefined : this.db.get(id);
  }

  /** Adds the account unless its id or e-mail address is taken (decided inside one write transaction). */
  async create(record: AccountRecord): Promise<'created' | 'email-taken' | 'id-taken'> {
    const email = normalisedEmail(record.email);
    return this.root.transaction(() => {
      if (this.byEmailDb.get(email) !== undefined) return 'email-taken';
      if (this.db.get(record.accountId) !== undefined) return 'id-taken';
      this.db.put(record.accountId, { ...record, email });
      this.byEmailDb.put(email, record.accountId);
      return 'created';
    });
  }

  /** Applies `change` to the stored account (read and written in one transaction); undefined when absent. */
  async update(accountId: string, change: (a: AccountRecord) => AccountRecord): Promise<AccountRecord | undefined> {
    return this.root.transaction(() => {
      const current = this.db.get(accountId);
      if (!current) return undefined;
      const next = { ...change(current), accountId, email: current.email };
      this.db.put(accountId, next);
      return next;
    });
  }

  list(): AccountRecord[] {
    return [...this.db.getRange()].map(({ value }) => value).sort((a, b) => a.created.localeCompare(b.created));
  }
}
