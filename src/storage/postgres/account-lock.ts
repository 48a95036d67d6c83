// Exclusive sections per account across nodes. An enrolment's rule spans the store and the in-memory gallery
// ("this id is free and this face is not enrolled yet"), so two creates must not interleave between the check
// and the write, even on two nodes. The section is one transaction that first takes an advisory lock on the
// account (pg_advisory_xact_lock: released by the commit or by the connection's death, never left behind),
// and the section's person writes join that transaction. The fence tells the caller which changes of the
// account were committed before it got the lock: its gallery must have applied them before it checks;
// `written` tells it, once the section committed, which change its own writes end at, so its answer waits
// for that change alone rather than for the whole log as it stood (other accounts' and later writes).
import { appendedHead, appendedOwnChanges } from './change-log';
import type { AccountScope, WrittenFence } from '../interfaces';
import { lockKey } from './lock-keys';
import { PgPersonRepository } from './persons';
import { JoinedTransaction, type Db } from './pool';
import type { Sealer } from '../crypto/sealer';

/**
 * Runs `fn` holding the account's lock; its writes through `scope.persons` commit with it (or not at all, if
 * `fn` throws). A wait for the lock longer than the statement timeout fails with DatabaseUnavailableError.
 */
export async function exclusiveForAccount<T>(db: Db, sealer: Sealer, accountId: string,
  fn: (scope: AccountScope) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    // Schema 5's function takes the lock, then reads the fence in a statement of its own, so the previous
    // holder's commit is visible (its lock went only after it committed): one round trip for both.
    const { rows } = await tx.query<{ fence: string }>('SELECT face_check_lock_account($1, $2) AS fence',
      [lockKey('account', accountId), accountId], 'face_check_lock_account');
    const fence = { seq: Number(rows[0].fence) };
    const written: WrittenFence = { seq: 0 };
    const result = await fn({ persons: new PgPersonRepository(new JoinedTransaction(tx), sealer), fence, written });
    // After the change log's own hook (registered by the section's first write), just before COMMIT.
    tx.beforeCommit(async () => {
      written.seq = appendedHead(tx, accountId);
      written.own = appendedOwnChanges(tx);
    });
    return result;
  });
}
