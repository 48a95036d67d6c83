// The person change log: every person write appends (account, person, op, model) to person_changes in its
// own transaction, and pg_notify tells listening nodes on commit (./change-follower.ts), so each node can keep
// its in-memory gallery in step with writes made by the others.
//
// A follower reads "seq > the last one I applied", which is only safe if sequence numbers become visible in
// order: with two writers, seq 11 could commit before seq 10, the follower would move past 10 and never see
// it. So the append is the last thing a transaction does (a beforeCommit hook) and takes a fixed advisory
// lock first; the lock is held until the commit has made the rows visible, so the next writer draws its
// numbers only after. This serialises the commits of person writes (not their work), about one commit time each.
import { CHANGE_LOG_LOCK } from './lock-keys';
import type { Queryable, Tx } from './pool';

/** LISTEN/NOTIFY channel; the payload is the highest seq the transaction appended. */
export const CHANGE_CHANNEL = 'face_check_person_changes';

export type ChangeOp = 'create' | 'replace' | 'template' | 'remove';

export interface PersonChange {
  seq: number;
  accountId: string;
  personId: string;
  op: ChangeOp;
  /** The model of the template written (for a removal: of the template removed). */
  modelId: string;
  /** Commit-time clock of the database (ISO 8601). */
  at: string;
}

export type NewChange = Pick<PersonChange, 'accountId' | 'personId' | 'op' | 'modelId'>;

/** Meta row naming the highest seq pruned: a follower behind it has missed changes and must rebuild. */
const PRUNED_THROUGH = 'change-log-pruned-through';

const pendingOf = new WeakMap<Tx, NewChange[]>();

/** Appends `changes` to the log when `tx` commits (with every other change the transaction made). */
export function appendChanges(tx: Tx, changes: readonly NewChange[]): void {
  if (changes.length === 0) return;
  let pending = pendingOf.get(tx);
  if (!pending) {
    pending = [];
    pendingOf.set(tx, pending);
    const list = pending;
    tx.beforeCommit(async (q) => {
      pendingOf.delete(tx);
      await q.query('SELECT pg_advisory_xact_lock($1)', [CHANGE_LOG_LOCK]);
      // clock_timestamp, not now(): the time of the append (just before commit), so `at` grows with seq.
      const { rows } = await q.query<{ seq: string }>(`INSERT INTO person_changes (account_id, person_id, op, model_id, at)
        SELECT a, p, o, m, clock_timestamp() FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS c(a, p, o, m)
        RETURNING seq`,
      [list.map((c) => c.accountId), list.map((c) => c.personId), list.map((c) => c.op), list.map((c) => c.modelId)]);
      const last = rows.reduce((max, r) => Math.max(max, Number(r.seq)), 0);
      await q.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, String(last)]);
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
  const { rows } = await q.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM person_changes');
  // An emptied (pruned) log still continues after what it held.
  return Math.max(Number(rows[0].seq ?? 0), await prunedThrough(q));
}

/** The account's highest committed seq (0: none). */
export async function lastSeqOf(q: Queryable, accountId: string): Promise<number> {
  const { rows } = await q.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM person_changes WHERE account_id = $1', [accountId]);
  return Number(rows[0].seq ?? 0);
}

/** The highest seq pruned from the log (0: none). */
export async function prunedThrough(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ value: Buffer }>('SELECT value FROM meta WHERE key = $1', [PRUNED_THROUGH]);
  return rows[0] ? Number(rows[0].value.toString('utf8')) : 0;
}

/**
 * Deletes changes older than `before` (the persons table holds the state; the log only carries running
 * nodes from one write to the next) and records how far it deleted. Returns how many it deleted.
 */
export async function pruneChanges(db: { transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> }, before: Date): Promise<number> {
  return db.transaction(async (tx) => {
    // A prefix of the log by seq, so a follower is either past all that was deleted or told it missed some.
    const { rows } = await tx.query<{ seq: string }>(`DELETE FROM person_changes
      WHERE seq <= (SELECT max(seq) FROM person_changes WHERE at < $1) RETURNING seq`, [before]);
    if (rows.length === 0) return 0;
    const highest = rows.reduce((max, r) => Math.max(max, Number(r.seq)), 0);
    await tx.query(`INSERT INTO meta (key, value) VALUES ($1, convert_to($2, 'UTF8'))
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
      WHERE convert_from(meta.value, 'UTF8')::bigint < convert_from(EXCLUDED.value, 'UTF8')::bigint`,
    [PRUNED_THROUGH, String(highest)]);
    return rows.length;
  });
}
