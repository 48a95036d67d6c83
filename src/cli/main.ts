// The face-check command line:
//   face-check serve   [--config <file.ini>]
//   face-check keys create [--config <file.ini>] [--account <id>] [--role full|enrol|match] [--label <text>]
//                          [--signing | --public-key <file.pem>]
//   face-check keys list   [--config <file.ini>]
//   face-check keys revoke [--config <file.ini>] <keyId>
//   face-check keys service-public-key [--config <file.ini>]
//   face-check reindex [--config <file.ini>] [--all]
//   face-check rotate-key [--config <file.ini>] [--new-key-file <file>]
//   face-check migrate --from <file.ini> --to <file.ini>
//   face-check record  [--config <file.ini>] --out <dir | file.oni | file.bag> [--frames N | --seconds S] [--format face-check|fakenect|oni|bag]
//   face-check record --out <folder> --label <kind> ... | liveness-eval <folder> (src/cli/liveness.ts)
//   face-check cameras [--config <file.ini>] [--format text|json] (src/cli/cameras.ts)
//   face-check precision-check [--photo <file>] [--iterations N] [--format text|json] (src/cli/precision-check.ts)
//   face-check licence create|list|revoke|release|install-command|activation-code|device-key (src/cli/licences.ts)
//   face-check account create|list|set-plan (src/cli/accounts.ts)
//   face-check device install --server-url <url> --licence-key <key> --public-key-sha256 <hex> [--root <dir>]
//                             [--camera <source>|none] [--port <n>] (src/cli/device-install.ts)
//   face-check service install [--prefix <dir>] [--config <file.ini>] (src/cli/service-install.ts)
// Without --config the package's config/default.ini is used.
// Exit codes: 0 done; 1 failed; 2 usage; 69 (EX_UNAVAILABLE) a device could not reach its licence server, or a
// cloud node its database, at start; 75 (EX_TEMPFAIL) the store is busy; 77 (EX_NOPERM) a device's licence was
// refused or its document did not verify; 78 (EX_CONFIG) the ini is wrong (src/cli/exit-code.ts). A service
// unit with Restart=on-failure retries them all. precision-check has codes of its own (65, 66, 72).
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/types';
import { ACCOUNT_USAGE, accountCommand } from './accounts';
import { ACCOUNT_ID, configOf, parseArgs, stdio, UsageError, type Args, type Io } from './args';
import { CAMERAS_USAGE, camerasCommand } from './cameras';
import { DEVICE_USAGE, deviceCommand } from './device-install';
import { failureExitCode } from './exit-code';
import { LICENCE_USAGE, licenceCommand } from './licences';
import { LIVENESS_USAGE, livenessEvalCommand, recordSessionCommand } from './liveness';
import { SERVICE_USAGE, serviceCommand } from './service-install';
import { isRole, ROLES } from '../domain/roles';
import { SNAPSHOT_FOLDER } from '../matching/snapshot/place';
import { discardSnapshots } from '../matching/snapshot/write';
import { createEngine } from '../engine';
import type { FaceEngine } from '../engine/types';
import { DEFAULT_ACCOUNT } from '../services/auth';
import { reindex } from '../services/reindex';
import { checkedPublicKey } from '../services/request-signing';
import { startService, type RunningService } from '../start/start-service';
import { generateRsaKeyPair } from '../storage/records';
import { MIGRATE_USAGE, migrateCommand } from './migrate';
import { PRECISION_CHECK_USAGE, precisionCheckCommand } from './precision-check';
import { openCommandStore } from './open-store';
import type { AsyncStore } from '../storage/interfaces';
import { openStore } from '../storage/lmdb/store';
import { lockStore } from '../storage/lmdb/process-lock';

export const USAGE = `usage:
  face-check serve   [--config <file.ini>]
  face-check keys create [--config <file.ini>] [--account <id>] [--role ${ROLES.join('|')}] [--label <text>]
                         [--signing | --public-key <file.pem>]
  face-check keys list   [--config <file.ini>]
  face-check keys revoke [--config <file.ini>] <keyId>
  face-check keys service-public-key [--config <file.ini>]
${ACCOUNT_USAGE}
  face-check reindex [--config <file.ini>] [--all]
  face-check rotate-key [--config <file.ini>] [--new-key-file <file>]
${MIGRATE_USAGE}
  face-check record  [--config <file.ini>] --out <dir | file.oni | file.bag> [--frames N | --seconds S] [--format face-check|fakenect|oni|bag]
${LIVENESS_USAGE}
${CAMERAS_USAGE}
${PRECISION_CHECK_USAGE}
${LICENCE_USAGE}
${DEVICE_USAGE}
${SERVICE_USAGE}`;

async function keysCommand(args: Args, io: Io): Promise<number> {
  const [, sub, ...rest] = args.positional;
  const config = configOf(args);
  const store = await openCommandStore(config);
  try {
    const now = new Date().toISOString();
    switch (sub) {
      case 'create': {
        const account = String(args.flags.get('account') ?? DEFAULT_ACCOUNT);
        const role = String(args.flags.get('role') ?? 'full');
        if (!ACCOUNT_ID.test(account)) throw new UsageError('--account: 1-64 characters of A-Z a-z 0-9 _ . -');
        if (!isRole(role)) throw new UsageError(`--role: one of ${ROLES.join(', ')}`);
        const signing = await signingKeyOf(args);
        const { key, record } = await store.apiKeys.create(account, role, String(args.flags.get('label') ?? ''), now,
          signing?.publicKey);
        io.out(`created key ${record.keyId} (account ${record.accountId}, role ${record.role}` +
          `${signing ? ', signs its requests' : ''})`);
        io.out(`Api-Key: ${key}`);
        if (signing?.privateKey) io.out(`signing_key (RSA-2048 private key, PKCS#8 PEM):\n${signing.privateKey.trimEnd()}`);
        io.out(signing?.privateKey ? 'the key and the signing_key are shown only this once' : 'the key is shown only this once');
        if (signing) io.out(`responses are signed with this service key:\n${(await store.serviceKeys.responseSigning()).publicKey.trimEnd()}`);
        return 0;
      }
      case 'service-public-key': {
        io.out((await store.serviceKeys.responseSigning()).publicKey.trimEnd());
        return 0;
      }
      case 'list': {
        io.out(['keyId', 'account', 'role', 'created', 'revoked', 'signing', 'label'].join('\t'));
        for (const k of await store.apiKeys.list()) {
          io.out([k.keyId, k.accountId, k.role, k.created, k.revoked ?? '-', k.signingPublicKey ? 'yes' : 'no', k.label].join('\t'));
        }
        return 0;
      }
      case 'revoke': {
        if (rest.length !== 1) throw new UsageError('keys revoke needs one keyId (see keys list)');
        if (!(await store.apiKeys.revoke(rest[0], now))) {
          io.err(`no key with id ${rest[0]}`);
          return 1;
        }
        io.out(`revoked ${rest[0]}`);
        return 0;
      }
      default:
        throw new UsageError(`keys: unknown subcommand ${sub ?? '(none)'}`);
    }
  } finally {
    await store.close();
  }
}

/** --signing: a fresh key pair (the private half is shown once, never stored); --public-key: the client's own. */
async function signingKeyOf(args: Args): Promise<{ publicKey: string; privateKey?: string } | undefined> {
  const file = args.flags.get('public-key');
  if (args.flags.get('signing') === true && file !== undefined) throw new UsageError('--signing or --public-key, not both');
  if (args.flags.get('signing') === true) return generateRsaKeyPair();
  if (typeof file !== 'string') return undefined;
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--public-key: ${(err as Error).message}`);
  }
  try {
    return { publicKey: checkedPublicKey(pem) };
  } catch (err) {
    throw new UsageError(`--public-key ${file}: ${(err as Error).message}`);
  }
}

async function reindexCommand(args: Args, io: Io): Promise<number> {
  const config = configOf(args);
  // LMDB: refused while a service holds the store, its galleries would keep the old templates. PostgreSQL:
  // the nodes' galleries follow every template written, so it runs beside them.
  const lock = config.storage.backend === 'lmdb' ? lockStore(config.storage.path, 'reindex') : undefined;
  let engine: FaceEngine | undefined;
  let store: AsyncStore | undefined;
  try {
    engine = await createEngine();
    store = await openCommandStore(config);
    const report = await reindex(config, store, engine, { all: args.flags.get('all') === true });
    io.out(`reindex with model ${engine.modelId}: ${report.done} recomputed, ${report.skipped} already current, ${report.failed.length} failed`);
    for (const f of report.failed) io.err(`  ${f.accountId}/${f.personId}: ${f.reason}`);
    return report.failed.length ? 1 : 0;
  } finally {
    await store?.close();
    await engine?.close();
    lock?.release();
  }
}

/**
 * Wraps the store's data key under a fresh key written to --new-key-file (default: [storage] key_file,
 * replaced atomically); no record is re-encrypted. Takes the store lock: stop the service first.
 */
async function rotateKeyCommand(args: Args, io: Io): Promise<number> {
  if (args.positional.length > 1) throw new UsageError('rotate-key takes no arguments');
  const config = configOf(args);
  const newKeyFile = args.flags.get('new-key-file');
  if (config.storage.backend === 'postgres') return rotatePostgresKey(config, newKeyFile, io);
  if (!fs.existsSync(path.join(config.storage.path, 'data.mdb'))) {
    io.err(`face-check: no store at ${config.storage.path}`);
    return 1;
  }
  const lock = lockStore(config.storage.path, 'rotate-key');
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    store = await openStore(config.storage.path, { keyFile: config.storage.key_file });
    const target = await store.rotateKey(typeof newKeyFile === 'string' ? path.resolve(newKeyFile) : undefined);
    io.out(`rotated: the store's data key is now wrapped by the key in ${target}; the previous key no longer opens it`);
    if (target !== store.keyFile) io.out(`set [storage] key_file = ${target} before the next start, then destroy ${store.keyFile}`);
    // The gallery snapshots carry the previous wrap: removed, the next start rebuilds the galleries from the store.
    const { removed, failed } = discardSnapshots(path.join(config.storage.path, SNAPSHOT_FOLDER));
    if (removed > 0) io.out(`removed ${removed} gallery snapshot${removed === 1 ? '' : 's'} (they carried the previous wrap); the next start rebuilds the galleries from the store`);
    for (const file of failed) io.err(`face-check: could not remove the gallery snapshot ${file}: delete it by hand, it carries the previous wrap`);
    await store.close();
    // Reopened alone (the lock is held): the store is compacted, dropping the page with the old wrap.
    store = await openStore(config.storage.path, { keyFile: target });
    return failed.length ? 1 : 0;
  } finally {
    await store?.close();
    lock.release();
  }
}

/**
 * PostgreSQL: the data key's wrap in the database is replaced (no row re-encrypted) while the nodes run; each
 * node needs the new key file before its next start.
 */
async function rotatePostgresKey(config: Config, newKeyFile: string | boolean | undefined, io: Io): Promise<number> {
  const store = await openCommandStore(config);
  try {
    const target = await store.rotateKey(typeof newKeyFile === 'string' ? path.resolve(newKeyFile) : undefined);
    io.out(`rotated: the database's data key is now wrapped by the key in ${target}; the previous key no longer opens it`);
    io.out('running nodes keep working; give every node this key file ([storage] key_file) before its next start');
    return 0;
  } finally {
    await store.close();
  }
}

/** Writes a recording of the configured camera ([camera] source) for the replay source or fakenect. */
async function recordCommand(args: Args, io: Io): Promise<number> {
  if (args.flags.has('label')) return recordSessionCommand(args, io);
  const sessionOnly = ['subject', 'distance-cm', 'note', 'session'].filter((f) => args.flags.has(f));
  if (sessionOnly.length) throw new UsageError(`record: --${sessionOnly[0]} describes a labelled session: give --label too`);
  const config = configOf(args);
  const { parseRecordArgs, recordCamera } = await import('../device/record');
  const { cameraFps, checkCameraConfig } = await import('../device/camera-settings');
  const flags = [...args.flags].filter(([k]) => k !== 'config').flatMap(([k, v]) => [`--${k}`, String(v)]);
  let options;
  try {
    options = parseRecordArgs(flags, cameraFps(checkCameraConfig(config)));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const status = await recordCamera(config, options);
  io.out(`recorded ${status.framesRecorded} frames of the ${config.camera.source} camera into ${path.resolve(options.dir)} (${options.format})`);
  return 0;
}

async function serveCommand(args: Args, io: Io): Promise<RunningService> {
  const service = await startService(configOf(args), { print: io.out });
  // First SIGTERM/SIGINT: drain (in-flight requests finish, bounded by [server] drain_timeout_ms), close the
  // camera, engine and store, exit 0. A second signal exits at once (1), whatever is still running.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      io.err(`face-check: ${signal} while stopping: exiting now`);
      process.exit(1);
    }
    stopping = true;
    service.app.log.info({ signal }, 'stopping: draining requests');
    service.close().then(() => process.exit(0), (err) => {
      io.err(`face-check: error while stopping: ${(err as Error).message}`);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return service;
}

/** Runs a command; resolves with the exit code (serve: once listening, the process then stays up). */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  try {
    const args = parseArgs(argv);
    const command = args.positional[0];
    if (args.flags.get('help') || command === 'help' || command === undefined) {
      io.out(USAGE);
      return command === undefined && !args.flags.get('help') ? 2 : 0;
    }
    switch (command) {
      case 'serve':
        await serveCommand(args, io);
        return 0;
      case 'account':
        return await accountCommand(args, io);
      case 'service':
        return await serviceCommand(args, io);
      case 'keys':
        return await keysCommand(args, io);
      case 'reindex':
        return await reindexCommand(args, io);
      case 'rotate-key':
        return await rotateKeyCommand(args, io);
      case 'migrate':
        return await migrateCommand(args, io);
      case 'record':
        return await recordCommand(args, io);
      case 'liveness-eval':
        return await livenessEvalCommand(args, io);
      case 'cameras':
        return await camerasCommand(args, io);
      case 'precision-check':
        return await precisionCheckCommand(args, io);
      case 'device':
        return await deviceCommand(args, io);
      case 'licence':
        return await licenceCommand(args, io);
      default:
        throw new UsageError(`unknown command ${command}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`face-check: ${err.message}`);
      io.err(USAGE);
      return 2;
    }
    return failureExitCode(err, io);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exit(code);
  });
}

export { parseArgs } from './args';
export type { Io } from './args';
