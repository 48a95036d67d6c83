// Moving a store's data to another backend (face-check migrate: LMDB -> PostgreSQL or back): every kind of
// data in ./migrate/ (accounts, API keys, the response-signing key, activation codes, licences, their usage
// and last usage report numbers, quota counters, key-usage statistics, persons). Secrets move as they are stored: hashes as hashes, sealed
// values opened with the source's data key and sealed again with the target's. Re-runnable: what the target
// holds already is left and counted (counters are raised to the source's count, never lowered). The result is
// proven by counts and checksums per kind and account, computed on both sides. Sessions are not moved: they
// are short-lived sign-ins, and operators sign in again on the moved store.
import crypto from 'node:crypto';
import type { AsyncStore } from '../storage/interfaces';
import { ACCOUNTS, API_KEYS, copyResponseSigningKey, type SigningKeyOutcome } from './kinds/accounts';
import type { Checksum } from './kinds/checksum';
import { KEY_USAGE, LICENCE_USAGE, LICENCE_USAGE_REPORTS, QUOTA } from './kinds/counters';
import type { CopyCount, MovedKind, Progress } from './kinds/kind';
import { ACTIVATION_CODES, LICENCES } from './kinds/licences';
import { PERSONS } from './kinds/persons';

export { personChecksums } from './kinds/persons';
export { STORE_SCOPE } from './kinds/checksum';

/** In copying order: persons, the bulk, last. */
export const MOVED_KINDS: readonly MovedKind[] = [ACCOUNTS, API_KEYS, ACTIVATION_CODES, LICENCES, LICENCE_USAGE, LICENCE_USAGE_REPORTS, QUOTA, KEY_USAGE, PERSONS];

export interface MigrationReport {
  kinds: Array<{ name: string } & CopyCount>;
  responseSigningKey: SigningKeyOutcome;
  /** Sessions in the source, not moved: operators sign in again on the target. */
  sessionsNotMoved: number;
}

export async function migrateStore(from: AsyncStore, to: AsyncStore, progress: Progress = () => undefined): Promise<MigrationReport> {
  const report: MigrationReport = { kinds: [], responseSigningKey: 'none', sessionsNotMoved: await from.sessions.count() };
  for (const kind of MOVED_KINDS) {
    progress(`${kind.name}: copying`);
    const count = await kind.copy(from, to, progress);
    report.kinds.push({ name: kind.name, ...count });
    // Right after the keys: clients holding them verify responses with this key.
    if (kind === API_KEYS) report.responseSigningKey = await copyResponseSigningKey(from, to, report.kinds);
  }
  return report;
}

/** One kind in one scope: the source's checksum and the target's (absent: the target holds none). */
export interface KindVerdict {
  name: string;
  source: Checksum;
  target: Checksum | undefined;
  same: boolean;
}

export interface ScopeVerdict {
  /** An account id, or STORE_SCOPE for what belongs to no account. */
  scope: string;
  kinds: KindVerdict[];
  same: boolean;
  /** SHA-256 over the scope's kinds and checksums on the source: one short value to compare runs by. */
  digest: string;
}

export interface Verification {
  /** Every scope of the source, in order. */
  scopes: ScopeVerdict[];
  /** Scopes only the target holds data of, per kind (left alone and not compared: the target may serve others too). */
  onlyOnTarget: Array<{ name: string; scope: string; count: number }>;
  same: boolean;
}

/** Counts and checksums of every kind, per account, computed on both sides. */
export async function verifyStores(from: AsyncStore, to: AsyncStore, progress: Progress = () => undefined): Promise<Verification> {
  const byScope = new Map<string, KindVerdict[]>();
  const onlyOnTarget: Verification['onlyOnTarget'] = [];
  for (const kind of MOVED_KINDS) {
    progress(`${kind.name}: verifying`);
    const [a, b] = [await kind.checksums(from), await kind.checksums(to)];
    for (const [scope, source] of a) {
      const target = b.get(scope);
      let list = byScope.get(scope);
      if (!list) byScope.set(scope, (list = []));
      list.push({ name: kind.name, source, target, same: target?.count === source.count && target.sha256 === source.sha256 });
    }
    for (const [scope, target] of b) if (!a.has(scope)) onlyOnTarget.push({ name: kind.name, scope, count: target.count });
  }
  const scopes = [...byScope.keys()].sort().map((scope): ScopeVerdict => {
    const kinds = byScope.get(scope)!;
    const digest = crypto.createHash('sha256');
    for (const k of kinds) digest.update(`${k.name}\0${k.source.count}\0${k.source.sha256}\0`);
    return { scope, kinds, same: kinds.every((k) => k.same), digest: digest.digest('hex') };
  });
  return { scopes, onlyOnTarget, same: scopes.every((s) => s.same) };
}
