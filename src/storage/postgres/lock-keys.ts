// Advisory lock keys. PostgreSQL's advisory locks are named by one 64-bit number shared by everything in the
// database, so each purpose hashes its own namespace with the name it locks (an account, a throttle key);
// the fixed locks are constants far from small numbers another program might pick. A hash collision only
// makes two unrelated callers wait for each other, never lets two holders in.
import crypto from 'node:crypto';

/** Held by the migration transaction: nodes starting together apply a schema once. */
export const MIGRATION_LOCK = '7262011520466829313';
/** Held from the change log append to COMMIT: change sequence numbers become visible in order (./change-log.ts). */
export const CHANGE_LOG_LOCK = '7262011520466829314';
/** Tried by a housekeeping pass (./housekeeping.ts): one node at a time prunes and purges. */
export const HOUSEKEEPING_LOCK = '7262011520466829315';

export type LockNamespace = 'account' | 'licences-of-account' | 'sign-in-throttle';

/** A signed 64-bit key (decimal text, as pg passes bigint) for `name` within `namespace`. */
export function lockKey(namespace: LockNamespace, name: string): string {
  const digest = crypto.createHash('sha256').update(`face-check ${namespace}\n${name}`, 'utf8').digest();
  return digest.readBigInt64BE(0).toString();
}
