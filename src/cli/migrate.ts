// face-check migrate --from <ini> --to <ini>: copies everything a store holds but its sessions (accounts, API
// keys, the response-signing key, activation codes, licences, their usage, quota counters, key-usage
// statistics, persons) from one configured store to another (LMDB -> PostgreSQL or back), then compares
// counts and checksums per kind and account on both. Re-runnable: what the target holds already stays. Run
// it with the source's service stopped (LMDB: the store lock is taken), so nothing changes under the copy.
import { loadConfig } from '../config/load';
import type { Config } from '../config/types';
import { migrateStore, STORE_SCOPE, verifyStores, type ScopeVerdict } from '../migrate/migrate-store';
import type { AsyncStore } from '../storage/interfaces';
import { lmdbDataFile } from '../storage/lmdb/map-advice';
import { lockStore, type StoreLock } from '../storage/lmdb/process-lock';
import fs from 'node:fs';
import { type Args, type Io, UsageError } from './args';
import { openCommandStore } from './open-store';

export const MIGRATE_USAGE = '  face-check migrate --from <file.ini> --to <file.ini>   (LMDB <-> PostgreSQL; re-runnable)';

function iniFlag(args: Args, name: string): string {
  const value = args.flags.get(name);
  if (typeof value !== 'string') throw new UsageError(`migrate needs --${name} <file.ini>`);
  return value;
}

function describe(config: Config): string {
  return config.storage.backend === 'lmdb' ? `LMDB ${config.storage.path}` : 'PostgreSQL';
}

function sameStore(a: Config, b: Config): boolean {
  if (a.storage.backend !== b.storage.backend) return false;
  return a.storage.backend === 'lmdb' ? a.storage.path === b.storage.path : a.storage.postgres_url === b.storage.postgres_url;
}

function scopeName(scope: string): string {
  return scope === STORE_SCOPE ? 'store-wide' : `account ${scope}`;
}

/** One line per account: what was compared and whether it matches, naming the kinds that differ. */
function verdictLine(v: ScopeVerdict): string {
  const counts = v.kinds.map((k) => `${k.name} ${k.source.count}`).join(', ');
  if (v.same) return `${scopeName(v.scope)}: match (${counts}) ${v.digest.slice(0, 16)}`;
  const differing = v.kinds.filter((k) => !k.same)
    .map((k) => `${k.name} (source ${k.source.count}, target ${k.target?.count ?? 0}${k.target?.count === k.source.count ? ', other content' : ''})`);
  return `${scopeName(v.scope)}: DIFFER in ${differing.join(', ')}`;
}

export async function migrateCommand(args: Args, io: Io): Promise<number> {
  if (args.positional.length > 1) throw new UsageError('migrate takes no arguments besides --from and --to');
  const from = loadConfig(iniFlag(args, 'from'));
  const to = loadConfig(iniFlag(args, 'to'));
  if (sameStore(from, to)) throw new UsageError('--from and --to name the same store');
  // A source that does not exist is a mistyped path or ini: refused before anything is created (opening it
  // would make an empty store there, and copy nothing).
  if (from.storage.backend === 'lmdb' && !fs.existsSync(lmdbDataFile(from.storage.path))) {
    throw new UsageError(`--from: no store at ${from.storage.path} (LMDB ${lmdbDataFile(from.storage.path)} does not exist)`);
  }
  // An LMDB side is locked: neither a service nor another command may change it during the copy.
  const locks: StoreLock[] = [];
  let source: AsyncStore | undefined;
  let target: AsyncStore | undefined;
  try {
    for (const c of [from, to]) if (c.storage.backend === 'lmdb') locks.push(lockStore(c.storage.path, 'migrate'));
    source = await openCommandStore(from, { bulkReads: true });
    target = await openCommandStore(to);
    io.out(`migrate: ${describe(from)} -> ${describe(to)}`);
    const progress = (line: string) => io.out(`migrate: ${line}`);
    const report = await migrateStore(source, target, progress);
    let failed = 0;
    for (const k of report.kinds) {
      io.out(`${k.name}: ${k.copied} copied, ${k.present} already there, ${k.failed.length} failed`);
      for (const f of k.failed) io.err(`  ${k.name} ${f.item}: ${f.reason}`);
      failed += k.failed.length;
    }
    io.out(`response-signing key: ${report.responseSigningKey}`);
    if (report.responseSigningKey === 'differs') {
      io.err('the target holds another response-signing key: clients that pinned the source\'s will not verify its responses');
    }
    io.out(`sessions: ${report.sessionsNotMoved} not moved (operators sign in again on the target)`);
    const verification = await verifyStores(source, target, progress);
    for (const v of verification.scopes) io.out(verdictLine(v));
    for (const o of verification.onlyOnTarget) io.out(`${scopeName(o.scope)}: ${o.count} ${o.name} only on the target (left alone, not compared)`);
    const complete = verification.same && failed === 0 && report.responseSigningKey !== 'differs';
    io.out(complete ? 'migrate: complete' : 'migrate: INCOMPLETE (see above)');
    return complete ? 0 : 1;
  } finally {
    await target?.close();
    await source?.close();
    for (const lock of locks) lock.release();
  }
}
