// face-check migrate --from <ini> --to <ini>: copies persons, accounts, API keys and the response-signing key
// from one configured store to another (LMDB -> PostgreSQL or back), then compares counts and per-account
// checksums of both. Re-runnable: what the target holds already stays. Run it with the source's service
// stopped (LMDB: the store lock is taken), so nothing changes under the copy.
import { loadConfig } from '../config/load';
import type { Config } from '../config/types';
import { migrateStore, personChecksums } from '../ops/migrate-store';
import type { AsyncStore } from '../storage/postgres/interfaces';
import { lockStore, type StoreLock } from '../storage/process-lock';
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

export async function migrateCommand(args: Args, io: Io): Promise<number> {
  if (args.positional.length > 1) throw new UsageError('migrate takes no arguments besides --from and --to');
  const from = loadConfig(iniFlag(args, 'from'));
  const to = loadConfig(iniFlag(args, 'to'));
  if (from.storage.backend === to.storage.backend && from.storage.backend === 'lmdb' && from.storage.path === to.storage.path) {
    throw new UsageError('--from and --to name the same store');
  }
  // An LMDB side is locked: neither a service nor another command may change it during the copy.
  const locks: StoreLock[] = [];
  let source: AsyncStore | undefined;
  let target: AsyncStore | undefined;
  try {
    for (const c of [from, to]) if (c.storage.backend === 'lmdb') locks.push(lockStore(c.storage.path, 'migrate'));
    source = await openCommandStore(from);
    target = await openCommandStore(to);
    io.out(`migrate: ${describe(from)} -> ${describe(to)}`);
    const report = await migrateStore(source, target, (line) => io.out(`migrate: ${line}`));
    io.out(`persons: ${report.persons.copied} copied, ${report.persons.present} already there, ${report.persons.failed.length} failed`);
    for (const f of report.persons.failed) io.err(`  ${f.accountId}/${f.personId}: ${f.reason}`);
    io.out(`accounts: ${report.accounts.copied} copied, ${report.accounts.present} already there`);
    io.out(`API keys: ${report.apiKeys.copied} copied, ${report.apiKeys.present} already there`);
    io.out(`response-signing key: ${report.responseSigningKey}`);
    const { licences, activationCodes, sessions } = report.notMoved;
    if (licences + activationCodes + sessions > 0) {
      io.err(`not moved (not supported yet): ${licences} licence(s), ${activationCodes} activation code(s), ${sessions} session(s)`);
    }
    const [a, b] = [await personChecksums(source), await personChecksums(target)];
    let mismatches = 0;
    for (const [accountId, sum] of a) {
      const other = b.get(accountId);
      const same = other?.sha256 === sum.sha256 && other.persons === sum.persons;
      io.out(`account ${accountId}: ${sum.persons} person(s) ${same ? 'match' : `DIFFER (target: ${other?.persons ?? 0})`} ${sum.sha256.slice(0, 16)}`);
      if (!same) mismatches++;
    }
    if (report.responseSigningKey === 'differs') {
      io.err('the target holds another response-signing key: clients that pinned the source\'s will not verify its responses');
    }
    const complete = mismatches === 0 && report.persons.failed.length === 0 && report.responseSigningKey !== 'differs' &&
      licences + activationCodes === 0;
    io.out(complete ? 'migrate: complete' : 'migrate: INCOMPLETE (see above)');
    return complete ? 0 : 1;
  } finally {
    await target?.close();
    await source?.close();
    for (const lock of locks) lock.release();
  }
}
