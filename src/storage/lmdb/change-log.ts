// The change log: every write of a person's template (create, replace, setTemplate, remove, bulk create and
// the storage migrations) appends one entry per person in the transaction that writes it. An entry only says
// *who* changed, never what: a reader takes the person's current state from the store, so replaying an entry
// twice, or out of order, gives the same gallery. The gallery snapshots (src/matching/snapshot/) record the
// sequence they reflect and replay what came after; a multi-node follower can catch up the same way.
//
//   meta "change-seq"          the last sequence number handed out (0 or absent: none yet)
//   changes      seq -> [accountId, personId]       bounded: the oldest entries are pruned
//   change-heads accountId -> seq of its last change  (kept for every account, never pruned)
//
// The heads let a snapshot of an account that has not changed since stay valid however far the log is
// pruned by other accounts' changes.
import type { Database, RootDatabase } from 'lmdb';
import type { Change } from '../records';

export const CHANGES_DB = 'changes';
export const CHANGE_HEADS_DB = 'change-heads';
const SEQ = 'change-seq';

export class ChangeLog {
  private readonly changes: Database<[string, string], number>;
  private readonly heads: Database<number, string>;

  constructor(root: RootDatabase, private readonly meta: Database<unknown, string>) {
    this.changes = root.openDB<[string, string], number>({ name: CHANGES_DB });
    this.heads = root.openDB<number, string>({ name: CHANGE_HEADS_DB });
  }

  /** Appends one entry per person; call inside the write transaction that changes them. Returns the last seq. */
  append(accountId: string, personIds: Iterable<string>): number {
    let seq = this.lastChange();
    const before = seq;
    for (const personId of personIds) this.changes.put(++seq, [accountId, personId]);
    if (seq !== before) {
      this.meta.put(SEQ, seq);
      this.heads.put(accountId, seq);
    }
    return seq;
  }

  /** The last sequence number handed out; 0 before the first change. */
  lastChange(): number {
    const seq = this.meta.get(SEQ);
    return typeof seq === 'number' ? seq : 0;
  }

  /** The sequence of the account's last change; 0 when it never changed since the log began. */
  accountHead(accountId: string): number {
    return this.heads.get(accountId) ?? 0;
  }

  /** The entry `seq`, if still kept. */
  at(seq: number): Change | undefined {
    const value = this.changes.get(seq);
    return value && { seq, accountId: value[0], personId: value[1] };
  }

  /** The oldest entry still kept, or undefined when the log is empty. */
  oldestKept(): number | undefined {
    for (const key of this.changes.getKeys({ limit: 1 })) return key;
    return undefined;
  }

  /**
   * True when every change after `seq` is still in the log (none pruned), so a reader at `seq` can catch up
   * by replaying; false when `seq` is ahead of the log (a snapshot of another history) or entries are gone.
   */
  covers(seq: number): boolean {
    const last = this.lastChange();
    if (seq > last) return false;
    if (seq === last) return true;
    const oldest = this.oldestKept();
    return oldest !== undefined && oldest <= seq + 1;
  }

  /** The changes after `seq`, oldest first (at most `limit`). */
  *changesSince(seq: number, limit = Infinity): Generator<Change> {
    if (limit <= 0) return;
    let n = 0;
    for (const { key, value } of this.changes.getRange({ start: seq + 1 })) {
      yield { seq: key, accountId: value[0], personId: value[1] };
      if (++n >= limit) return;
    }
  }

  /** Entries kept. */
  size(): number {
    return this.changes.getCount();
  }

  /**
   * Deletes the oldest entries until at most `keep` remain, `batch` per transaction (off the request path:
   * writers wait for each batch). Returns how many were deleted.
   */
  async prune(keep: number, batch = 10_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const excess = this.size() - Math.max(1, keep);
      if (excess <= 0) return deleted;
      const doomed = [...this.changes.getKeys({ limit: Math.min(excess, batch) })];
      await this.changes.transaction(() => { for (const seq of doomed) this.changes.remove(seq); });
      deleted += doomed.length;
    }
  }
}
