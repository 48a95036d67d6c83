// The person change log: every person write appends (account, person, op, model) to person_changes in its
// own transaction, moves the account's head (change_heads) and, through pg_notify, tells listening nodes
// on commit (./change-follower.ts), so each node can keep its in-memory gallery in step with writes made by
// the others. As in LMDB (src/storage/lmdb/change-log.ts) an entry says who changed; readers take the person's
// current state from the table, so replaying an entry twice gives the same gallery.
//
// A follower reads "seq > the last one I applied", which is only safe if sequence numbers become visible in
// order: with two writers, seq 11 could commit before seq 10, the follower would move past 10 and never see
// it. So the append is the last thing a transaction does (a beforeCommit hook) and takes a fixed advisory
// lock first; the lock is held until the commit has made the rows visible, so the next writer draws its
// numbers only after. This serialises the commits of person writes (not their work), about one commit time
// each. Numbers may have gaps (a transaction that failed at its commit, the sequence's cache after a crash).
import type { Db, Queryable, Tx } from './pool';
import type { ChangeOp, FollowedChange, OwnChanges, PersonChange } from '../interfaces';

/** LISTEN/NOTIFY channel; the payload is the highest seq the transaction appended. */
export const CHANGE_CHANNEL = 'face_check_person_changes';

export type NewChange = Pick<PersonChange, 'accountId' | 'personId' | 'op' | 'modelId'> & {
  /** What the write leaves in the persons table for this person (null: gone), as a follower would read it. */
  current?: FollowedChange['current'];
};

/** Meta row naming the highest seq pruned: a follower behind it has missed changes and must rebuild. */
export const PRUNED_THROUGH = 'change-log-pruned-through';

const pendingOf = new WeakMap<Tx, NewChange[]>();

/** Appends `changes` to the log when `tx` commits (with every other change the transaction made). */
/** Each account's last change a transaction appended (account -> seq), known once its hook ran before COMMIT. */
const headsOf = new WeakMap<Tx, ReadonlyMap<string, number>>();

/** The seq of `accountId`'s last change that `tx` appended; 0 when it appended none (or before its commit hook). */
export function appendedHead(tx: Tx, accountId: string): number {
  return headsOf.get(tx)?.get(accountId) ?? 0;
}

const ownOf = new WeakMap<Tx, OwnChanges>();

/**
 * The changes `tx` appended, with what each leaves in the table, once its commit hook ran; undefined when a
 * change did not say what it leaves, or one person changed twice (only the table knows the last state then).
 */
export function appendedOwnChanges(tx: Tx): OwnChanges | undefined {
  return ownOf.get(tx);
}

function ownChanges(list: readonly NewChange[],
  rows: ReadonlyArray<{ change_seq: string; change_account: string; change_person: string; change_at: Date; previous_seq: string }>):
  OwnChanges | undefined {
  if (rows.length !== list.length || list.some((c) => c.current === undefined)) return undefined;
  const byPerson = new Map(list.map((c) => [`${c.accountId}\0${c.personId}`, c]));
  if (byPerson.size !== list.length) return undefined;
  const changes = rows.map((r): FollowedChange => {
    const c = byPerson.get(`${r.change_account}\0${r.change_person}`)!;
    return { seq: Number(r.change_seq), accountId: c.accountId, personId: c.personId, op: c.op, modelId: c.modelId,
      at: r.change_at.toISOString(), current: c.current };
  });
  return { after: Number(rows[0].previous_seq), changes };
}

export function appendChanges(tx: Tx, changes: readonly NewChange[]): void {
  if (changes.length === 0) return;
  let pending = pendingOf.get(tx);
  if (!pending) {
    pending = [];
    pendingOf.set(tx, pending);
    const list = pending;
    tx.beforeCommit(async (q) => {
      pendingOf.delete(tx);
      // Schema 5's function: the lock, the entries, the heads and the notification in one round trip, since
      // every node's person commits wait on that lock in turn.
      const { rows } = await q.query<{ change_seq: string; change_account: string; change_person: string; change_at: Date; previous_seq: string }>(
        'SELECT * FROM face_check_append_changes($1::text[], $2::text[], $3::text[], $4::text[]) ORDER BY change_seq',
        [list.map((c) => c.accountId), list.map((c) => c.personId), list.map((c) => c.op), list.map((c) => c.modelId)],
        'face_check_append_changes');
      const heads = new Map<string, number>();
      for (const r of rows) heads.set(r.change_account, Math.max(heads.get(r.change_account) ?? 0, Number(r.change_seq)));
      headsOf.set(tx, heads);
      const own = ownChanges(list, rows);
      if (own) ownOf.set(tx, own);
    });
  }
  pending.push(...changes);
}

interface ChangeRow {
  seq: string;
  account_id: string;
  person_id: string;
  op: ChangeOp;
  model_id: string;
  at: Date;
}

function changeOf(r: ChangeRow): PersonChange {
  return { seq: Number(r.seq), accountId: r.account_id, personId: r.person_id, op: r.op, modelId: r.model_id, at: r.at.toISOString() };
}

/** What one follower read returns: the prune horizon, the log's last seq and the changes after the position. */
export interface FollowerRead {
  horizon: number;
  lastSeq: number;
  changes: FollowedChange[];
}

/**
 * One round trip for a follower's wake-up: the prune horizon, the log's last seq and the changes after
 * `afterSeq` (at most `limit`), with the persons' current templates when `withTemplates` (so applying them
 * needs no second read). A row with no change carries the horizon and last seq alone.
 */
export async function readForFollower(q: Queryable, afterSeq: number, limit: number, withTemplates: boolean): Promise<FollowerRead> {
  const current = withTemplates ? 'p.model_id AS current_model, p.sealed_template, p.created AS current_created, p.updated AS current_updated'
    : 'NULL AS current_model, NULL::bytea AS sealed_template, NULL::timestamptz AS current_created, NULL::timestamptz AS current_updated';
  const join = withTemplates ? 'LEFT JOIN persons p ON p.account_id = c.account_id AND p.person_id = c.person_id' : '';
  const { rows } = await q.query<Partial<ChangeRow> & { horizon: string; last_seq: string | null; current_model: string | null;
    sealed_template: Buffer | null; current_created: Date | null; current_updated: Date | null }>(
    `SELECT coalesce((SELECT convert_from(value, 'UTF8')::bigint FROM meta WHERE key = $3), 0) AS horizon,
       (SELECT max(seq) FROM person_changes) AS last_seq, x.*
     FROM (SELECT 1) AS one LEFT JOIN LATERAL (
       SELECT c.seq, c.account_id, c.person_id, c.op, c.model_id, c.at, ${current}
       FROM person_changes c ${join} WHERE c.seq > $1 ORDER BY c.seq LIMIT $2) AS x ON true`,
    [afterSeq, limit, PRUNED_THROUGH]);
  const horizon = Number(rows[0]?.horizon ?? 0);
  const changes: FollowedChange[] = [];
  for (const r of rows) {
    if (r.seq === null || r.seq === undefined) continue;
    const change: FollowedChange = changeOf(r as ChangeRow);
    if (withTemplates) {
      change.current = r.current_model !== null && r.sealed_template !== null && r.current_created !== null && r.current_updated !== null
        ? { modelId: r.current_model, sealedTemplate: r.sealed_template, created: r.current_created, updated: r.current_updated } : null;
    }
    changes.push(change);
  }
  return { horizon, lastSeq: Math.max(Number(rows[0]?.last_seq ?? 0), horizon), changes };
}

/** Changes after `afterSeq`, oldest first, at most `limit`. */
export async function changesAfter(q: Queryable, afterSeq: number, limit: number): Promise<PersonChange[]> {
  const { rows } = await q.query<ChangeRow>(
    'SELECT seq, account_id, person_id, op, model_id, at FROM person_changes WHERE seq > $1 ORDER BY seq LIMIT $2',
    [afterSeq, limit]);
  return rows.map(changeOf);
}

/**
 * The highest committed seq (0: none): a gallery rebuilt after reading it follows the log from here. Not the
 * sequence's last value, which may belong to a transaction that has not committed yet.
 */
export async function lastSeq(q: Queryable): Promise<number> {
  // One round trip (a writer waits on it for read-your-writes). An emptied (pruned) log still continues
  // after what it held: the horizon.
  const { rows } = await q.query<{ seq: string | null; horizon: string | null }>(
    `SELECT (SELECT max(seq) FROM person_changes) AS seq,
       (SELECT convert_from(value, 'UTF8')::bigint FROM meta WHERE key = $1) AS horizon`, [PRUNED_THROUGH]);
  return Math.max(Number(rows[0].seq ?? 0), Number(rows[0].horizon ?? 0));
}

/** The account's last committed change (0: none ever). */
export async function accountHead(q: Queryable, accountId: string): Promise<number> {
  const { rows } = await q.query<{ seq: string }>('SELECT seq FROM change_heads WHERE account_id = $1', [accountId]);
  return Number(rows[0]?.seq ?? 0);
}

/** The highest seq pruned from the log (0: none). */
export async function prunedThrough(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ value: Buffer }>('SELECT value FROM meta WHERE key = $1', [PRUNED_THROUGH]);
  return rows[0] ? Number(rows[0].value.toString('utf8')) : 0;
}

/** Deletes the log up to and including `through` (a prefix: the horizon only moves forward); returns how many. */
async function pruneThrough(db: Db, through: string | null): Promise<number> {
  if (through === null) return 0;
  return db.transaction(async (tx) => {
    const { rowCount } = await tx.query('DELETE FROM person_changes WHERE seq <= $1', [through]);
    await tx.query(`INSERT INTO meta (key, value) VALUES ($1, convert_to($2, 'UTF8'))
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
      WHERE convert_from(meta.value, 'UTF8')::bigint < convert_from(EXCLUDED.value, 'UTF8')::bigint`,
    [PRUNED_THROUGH, through]);
    return rowCount ?? 0;
  });
}

/** The log as the LMDB store's ChangeLog presents it, plus a time-based prune for a cluster's followers. */
// Implements AsyncChangeLog (../interfaces.ts, checked where the store hands it out): not named here, since
// interfaces.ts takes OwnChanges from this file.
export class PgChangeLog {
  constructor(private readonly db: Db) {}

  lastChange(): Promise<number> {
    return lastSeq(this.db);
  }

  accountHead(accountId: string): Promise<number> {
    return accountHead(this.db, accountId);
  }

  async oldestKept(): Promise<number | undefined> {
    const { rows } = await this.db.query<{ seq: string | null }>('SELECT min(seq) AS seq FROM person_changes');
    return rows[0].seq === null ? undefined : Number(rows[0].seq);
  }

  /** Every change after `seq` is still in the log. By the prune horizon, not by the oldest entry: seqs have gaps. */
  async covers(seq: number): Promise<boolean> {
    return seq <= await this.lastChange() && seq >= await prunedThrough(this.db);
  }

  /** The entry at `seq`, with the horizon the log was pruned through (the entry is gone when seq <= it). */
  async entryAt(seq: number): Promise<{ entry: PersonChange | undefined; horizon: number }> {
    const { rows } = await this.db.query<ChangeRow>(
      'SELECT seq, account_id, person_id, op, model_id, at FROM person_changes WHERE seq = $1', [seq]);
    return { entry: rows[0] && changeOf(rows[0]), horizon: await prunedThrough(this.db) };
  }

  async *changesSince(seq: number, limit = Infinity): AsyncGenerator<PersonChange> {
    let after = seq;
    let left = limit;
    while (left > 0) {
      const page = await changesAfter(this.db, after, Math.min(left, 1000));
      for (const c of page) yield c;
      if (page.length < Math.min(left, 1000)) return;
      after = page[page.length - 1].seq;
      left -= page.length;
    }
  }

  async size(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM person_changes');
    return Number(rows[0].n);
  }

  /** Deletes the oldest entries until at most `keep` (at least 1) remain; returns how many. */
  async prune(keep: number): Promise<number> {
    const { rows } = await this.db.query<{ seq: string }>(
      'SELECT seq FROM person_changes ORDER BY seq DESC OFFSET $1 LIMIT 1', [Math.max(1, keep)]);
    return pruneThrough(this.db, rows[0]?.seq ?? null);
  }

  /** Deletes the entries appended before `before` (followers away longer must resync); returns how many. */
  async pruneBefore(before: Date): Promise<number> {
    const { rows } = await this.db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM person_changes WHERE at < $1', [before]);
    return pruneThrough(this.db, rows[0].seq);
  }
}
