// Device licences in PostgreSQL. The key is stored as its SHA-256 (the check-in's index) and sealed (place
// ["licences", licence id], as in LMDB). The rules that span a check and a write hold across nodes: a
// creation takes the account's licence lock (so two creations cannot both pass the plan's limit) and locks
// the activation code's row (so a code is redeemed once), then writes, in one transaction; an update and a
// check-in lock the licence's row, so of two devices checking in first at once exactly one binds.
import type { Grant, LicenceLimits } from '../../domain/grants';
import type { Sealer } from '../crypto/sealer';
import { deviceKeysOf, type DeviceKeyRecord } from '../device-keys';
import {
  type ChangeOutcome, type CreateAttempt, createLicence, type CreateOutcome, type CreateRules, decidedLicence,
  type Decision, type LicenceRecord, LICENCES_DB, type LicenceStatus, movedLicence, type NewLicence,
  type UsageReportMark, type UsageRow,
} from '../records';
import { checkCodeForUpdate, markCodeUsed } from './activation-codes';
import type { AsyncLicenceRepository } from '../interfaces';
import { addReportedUsage } from './licence-usage';
import { lockKey } from './lock-keys';
import type { Db, Queryable } from './pool';
import { iso, isoOrNull } from './rows';

interface LicenceRow {
  licence_id: string;
  account_id: string;
  label: string;
  status: LicenceStatus;
  grants: Grant[];
  limits: LicenceLimits;
  expires: Date | null;
  created: Date;
  updated: Date;
  revoked: Date | null;
  key_sha256: string;
  sealed_key: Buffer;
  device: LicenceRecord['device'];
  last_check: LicenceRecord['lastCheck'];
  device_keys: DeviceKeyRecord[];
}

const COLUMNS = `licence_id, account_id, label, status, grants, limits, expires, created, updated, revoked, key_sha256,
  sealed_key, device, last_check, device_keys`;

function recordOf(r: LicenceRow): LicenceRecord {
  return {
    licenceId: r.licence_id, accountId: r.account_id, label: r.label, status: r.status, grants: r.grants, limits: r.limits,
    expires: isoOrNull(r.expires), created: iso(r.created), updated: iso(r.updated), revoked: isoOrNull(r.revoked),
    keySha256: r.key_sha256, sealedKey: r.sealed_key, device: r.device, lastCheck: r.last_check,
    // Absent when there are none, as LMDB keeps a record without keys: both backends read back the same.
    ...(r.device_keys?.length ? { deviceKeys: r.device_keys } : {}),
  };
}

function json(v: unknown): string | null {
  return v === null ? null : JSON.stringify(v);
}

function byCreated(records: LicenceRecord[]): LicenceRecord[] {
  return records.sort((a, b) => a.created.localeCompare(b.created) || a.licenceId.localeCompare(b.licenceId));
}

export class PgLicenceRepository implements AsyncLicenceRepository {
  constructor(private readonly db: Db, private readonly sealer: Sealer) {}

  create(licence: NewLicence, rules: CreateRules): Promise<CreateOutcome> {
    return createLicence(licence, rules.now, this.sealer, (record) => this.db.transaction(async (tx): Promise<CreateAttempt> => {
      const { licenceId, accountId } = record;
      // Held to the commit: the count below and the insert are one step for this account on every node.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [lockKey('licences-of-account', accountId)]);
      const taken = await tx.query('SELECT 1 FROM licences WHERE licence_id = $1', [licenceId]);
      if (taken.rows.length) return 'id-taken';
      const held = await heldBy(tx, accountId);
      if (rules.maxLicences > 0 && held >= rules.maxLicences) return { outcome: 'limit-reached', held };
      const code = rules.activationCode;
      if (code) {
        const check = await checkCodeForUpdate(tx, code.sha256, code.plan, rules.now);
        if (check.outcome !== 'ok') return { outcome: 'code-refused', check };
        await markCodeUsed(tx, code.sha256, { at: record.created, accountId, licenceId });
      }
      await insertLicence(tx, record);
      return 'created';
    }));
  }

  async get(licenceId: string): Promise<LicenceRecord | undefined> {
    const { rows } = await this.db.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences WHERE licence_id = $1`, [licenceId]);
    return rows[0] && recordOf(rows[0]);
  }

  async byKeySha256(keySha256: string): Promise<LicenceRecord | undefined> {
    const { rows } = await this.db.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences WHERE key_sha256 = $1`, [keySha256]);
    return rows[0] && recordOf(rows[0]);
  }

  async openKey(record: LicenceRecord): Promise<string> {
    return this.sealer.open(LICENCES_DB, record.licenceId, record.sealedKey).toString('utf8');
  }

  async listByAccount(accountId: string): Promise<LicenceRecord[]> {
    const { rows } = await this.db.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences WHERE account_id = $1`, [accountId]);
    return byCreated(rows.map(recordOf));
  }

  async list(): Promise<LicenceRecord[]> {
    const { rows } = await this.db.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences`);
    return byCreated(rows.map(recordOf));
  }

  async importRecord(record: LicenceRecord, licenceKey: string): Promise<boolean> {
    const moved = movedLicence(record, licenceKey, this.sealer);
    // No conflict target: a present licence id or key hash both leave the row as it is.
    const { rowCount } = await this.db.query(`INSERT INTO licences (${COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING`, licenceValues(moved));
    return (rowCount ?? 0) > 0;
  }

  async update<R>(licenceId: string, decide: (current: LicenceRecord) => Decision<R>): Promise<ChangeOutcome<R>> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences WHERE licence_id = $1 FOR UPDATE`, [licenceId]);
      return decideAndWrite(tx, rows[0], decide);
    });
  }

  async checkIn<R>(keySha256: string, decide: (current: LicenceRecord) => Decision<R>, usage: readonly UsageRow[],
    report?: UsageReportMark): Promise<ChangeOutcome<R>> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<LicenceRow>(`SELECT ${COLUMNS} FROM licences WHERE key_sha256 = $1 FOR UPDATE`, [keySha256]);
      const outcome = await decideAndWrite(tx, rows[0], decide);
      // Under the licence row's lock: two check-ins of one licence cannot both add one report.
      if (outcome.outcome === 'written') await addReportedUsage(tx, outcome.record.licenceId, usage, report);
      return outcome;
    });
  }
}

/** Licences not revoked of the account (inside the creation's transaction, under the account's licence lock). */
async function heldBy(tx: Queryable, accountId: string): Promise<number> {
  const { rows } = await tx.query<{ n: string }>(
    "SELECT count(*) AS n FROM licences WHERE account_id = $1 AND status = 'active'", [accountId]);
  return Number(rows[0].n);
}

async function insertLicence(tx: Queryable, r: LicenceRecord): Promise<void> {
  await tx.query(`INSERT INTO licences (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    licenceValues(r));
}

function licenceValues(r: LicenceRecord): unknown[] {
  return [r.licenceId, r.accountId, r.label, r.status, JSON.stringify(r.grants), JSON.stringify(r.limits), r.expires, r.created,
    r.updated, r.revoked, r.keySha256, Buffer.from(r.sealedKey), json(r.device), json(r.lastCheck), JSON.stringify(deviceKeysOf(r))];
}

/** `decide` on the locked row; an accepted record is written, keeping what ties it to its account and key. */
async function decideAndWrite<R>(tx: Queryable, row: LicenceRow | undefined,
  decide: (current: LicenceRecord) => Decision<R>): Promise<ChangeOutcome<R>> {
  if (!row) return { outcome: 'missing' };
  const outcome = decidedLicence(recordOf(row), decide);
  if (outcome.outcome !== 'written') return outcome;
  const { record } = outcome;
  await tx.query(`UPDATE licences SET label = $2, status = $3, grants = $4, limits = $5, expires = $6, updated = $7,
    revoked = $8, device = $9, last_check = $10, device_keys = $11 WHERE licence_id = $1`,
  [record.licenceId, record.label, record.status, JSON.stringify(record.grants), JSON.stringify(record.limits), record.expires,
    record.updated, record.revoked, json(record.device), json(record.lastCheck), JSON.stringify(deviceKeysOf(record))]);
  return outcome;
}
