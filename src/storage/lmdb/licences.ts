// Device licences. A licence belongs to an account, carries its grants and limits, and is fetched by a device
// with its licence key. The key is stored twice, never in clear: its SHA-256 (the lookup index a check-in
// uses) and a copy sealed under the store's data key (./crypto/sealer.ts), so the licence line can show its
// installation command again. Rules that span a check and a write — the plan's licence limit, a one-time
// activation code, the first device to bind — are decided and written inside one LMDB write transaction.
import type { Database, RootDatabase } from 'lmdb';
import type { ActivationCodeRepository } from './activation-codes';
import type { Sealer } from '../crypto/sealer';
import { entriesWithPrefix } from './key-prefix';
import type { LicenceUsageRepository } from './licence-usage';
import {
  type ChangeOutcome, type CreateAttempt, createLicence, type CreateOutcome, type CreateRules, decidedLicence,
  type Decision, type LicenceRecord, LICENCES_DB, movedLicence, type NewLicence, type UsageReportMark,
  type UsageRow,
} from '../records';

export class LicenceRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<LicenceRecord, string>;
  private readonly byKeyDb: Database<string, string>;
  private readonly byAccountDb: Database<true, [string, string]>;

  constructor(root: RootDatabase, private readonly sealer: Sealer, private readonly codes: ActivationCodeRepository,
    private readonly usage: LicenceUsageRepository) {
    this.root = root;
    this.db = root.openDB<LicenceRecord, string>({ name: LICENCES_DB });
    this.byKeyDb = root.openDB<string, string>({ name: 'licence-keys' });
    this.byAccountDb = root.openDB<true, [string, string]>({ name: 'account-licences' });
  }

  /**
   * Adds a licence with a fresh key unless the account's licence limit is reached or the activation code is
   * refused; the limit, the code and the write are one transaction (a refused creation uses no code).
   */
  create(licence: NewLicence, rules: CreateRules): Promise<CreateOutcome> {
    // Every check comes before the first write: a callback that throws midway would not undo earlier puts.
    return createLicence(licence, rules.now, this.sealer, (record) => this.root.transaction((): CreateAttempt => {
      const { licenceId, accountId } = record;
      if (this.db.get(licenceId) !== undefined) return 'id-taken';
      const held = this.heldWithin(accountId);
      if (rules.maxLicences > 0 && held >= rules.maxLicences) return { outcome: 'limit-reached', held };
      const code = rules.activationCode;
      if (code) {
        const check = this.codes.checkWithin(code.sha256, code.plan, rules.now);
        if (check.outcome !== 'ok') return { outcome: 'code-refused', check };
        this.codes.markUsedWithin(code.sha256, check.record, { at: record.created, accountId, licenceId });
      }
      this.db.put(licenceId, record);
      this.byKeyDb.put(record.keySha256, licenceId);
      this.byAccountDb.put([accountId, licenceId], true);
      return 'created';
    }));
  }

  get(licenceId: string): LicenceRecord | undefined {
    return this.db.get(licenceId);
  }

  byKeySha256(keySha256: string): LicenceRecord | undefined {
    const id = this.byKeyDb.get(keySha256);
    return id === undefined ? undefined : this.db.get(id);
  }

  /** The licence key in clear, from its sealed copy. */
  openKey(record: LicenceRecord): string {
    return this.sealer.open(LICENCES_DB, record.licenceId, record.sealedKey).toString('utf8');
  }

  /** The account's licences, oldest first. */
  listByAccount(accountId: string): LicenceRecord[] {
    const out: LicenceRecord[] = [];
    for (const { key } of entriesWithPrefix(this.byAccountDb, [accountId])) {
      const record = this.db.get(key[1]);
      if (record) out.push(record);
    }
    return byCreated(out);
  }

  /** Every licence, oldest first (administrators' CLI). */
  list(): LicenceRecord[] {
    return byCreated([...this.db.getRange()].map(({ value }) => value));
  }

  /**
   * Stores a licence moved from another store as it was there (grants, binding, last check), its key sealed
   * again under this store's data key; nothing is written when its id or key is present. True when written.
   */
  async importRecord(record: LicenceRecord, licenceKey: string): Promise<boolean> {
    const moved = movedLicence(record, licenceKey, this.sealer);
    return this.root.transaction(() => {
      if (this.db.get(moved.licenceId) !== undefined || this.byKeyDb.get(moved.keySha256) !== undefined) return false;
      this.db.put(moved.licenceId, moved);
      this.byKeyDb.put(moved.keySha256, moved.licenceId);
      this.byAccountDb.put([moved.accountId, moved.licenceId], true);
      return true;
    });
  }

  /** Lets `decide` accept a new version of the licence or refuse, read and written in one transaction. */
  async update<R>(licenceId: string, decide: (current: LicenceRecord) => Decision<R>): Promise<ChangeOutcome<R>> {
    return this.root.transaction(() => this.decideWithin(this.db.get(licenceId), decide));
  }

  /**
   * A device's check-in: the licence of the key, `decide`d (refuse, or accept with the binding and last check
   * recorded), and on acceptance the reported usage added (unless `report` names one added before), all in
   * one transaction — of two devices checking in first at once, exactly one binds.
   */
  async checkIn<R>(keySha256: string, decide: (current: LicenceRecord) => Decision<R>,
    usage: readonly UsageRow[], report?: UsageReportMark): Promise<ChangeOutcome<R>> {
    return this.root.transaction(() => {
      const id = this.byKeyDb.get(keySha256);
      const outcome = this.decideWithin(id === undefined ? undefined : this.db.get(id), decide);
      if (outcome.outcome === 'written') this.usage.addReportWithin(outcome.record.licenceId, usage, report);
      return outcome;
    });
  }

  private decideWithin<R>(current: LicenceRecord | undefined, decide: (current: LicenceRecord) => Decision<R>): ChangeOutcome<R> {
    if (!current) return { outcome: 'missing' };
    const outcome = decidedLicence(current, decide);
    if (outcome.outcome === 'written') this.db.put(outcome.record.licenceId, outcome.record);
    return outcome;
  }

  /** Licences not revoked of the account (inside a transaction: the count a creation is judged by). */
  private heldWithin(accountId: string): number {
    let n = 0;
    for (const { key } of entriesWithPrefix(this.byAccountDb, [accountId])) {
      if (this.db.get(key[1])?.status === 'active') n++;
    }
    return n;
  }
}

function byCreated(records: LicenceRecord[]): LicenceRecord[] {
  return records.sort((a, b) => a.created.localeCompare(b.created) || a.licenceId.localeCompare(b.licenceId));
}

