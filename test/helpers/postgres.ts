// A throwaway PostgreSQL server for the tests: Debian's `postgresql` package (installed by .ci/run), started
// with initdb + pg_ctl in a temp folder on a free loopback port and stopped (folder removed) by stop(). Run as
// root (CI), the server runs as the `postgres` system user the package creates, since initdb refuses root.
// Where no server binaries are found the tests skip and say why, except when FACE_CHECK_REQUIRE_POSTGRES=1
// (CI), where a missing server is a failure.
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './free-port';

const execFileP = promisify(execFile);

const DEBIAN_ROOT = '/usr/lib/postgresql';
const SERVER_USER = 'postgres';
const DB_USER = 'face_check';
const DB_NAME = 'face_check';

export interface PostgresServer {
  /** postgres://face_check@127.0.0.1:<port>/face_check (trust authentication, no password). */
  url: string;
  port: number;
  /** The cluster's data directory (inside the temp folder that stop() removes). */
  dataDir: string;
  /** Stops the server (pg_ctl stop -m fast -w) and removes its temp folder. Safe to call twice. */
  stop(): Promise<void>;
  /**
   * pg_ctl restart on the same port and data: 'fast' disconnects clients and shuts down cleanly, 'immediate'
   * stops at once like a crash (the next start replays the WAL). Resolves when the server accepts again.
   */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server but keeps its data (clients get refused connections until resume()). */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts a halted server again on the same port. */
  resume(): Promise<void>;
  /** Creates another empty database on this server; returns its url. */
  createDatabase(name: string): Promise<string>;
}

function hasServerBinaries(dir: string): boolean {
  return ['initdb', 'pg_ctl'].every((b) => {
    try {
      fs.accessSync(path.join(dir, b), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The directory holding initdb and pg_ctl: FACE_CHECK_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string | undefined {
  const chosen = process.env.FACE_CHECK_PG_BIN;
  if (chosen) return hasServerBinaries(chosen) ? chosen : undefined;
  let versions: string[];
  try {
    versions = fs.readdirSync(DEBIAN_ROOT);
  } catch {
    return undefined;
  }
  return versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(DEBIAN_ROOT, v, 'bin'))
    .find(hasServerBinaries);
}

/** Why the PostgreSQL tests cannot run here, or undefined when they can. Throws where a server is required. */
export function postgresSkipReason(): string | undefined {
  if (postgresBinDir()) return undefined;
  const where = process.env.FACE_CHECK_PG_BIN
    ? `FACE_CHECK_PG_BIN=${process.env.FACE_CHECK_PG_BIN} has no initdb and pg_ctl`
    : `no ${DEBIAN_ROOT}/<version>/bin with initdb and pg_ctl`;
  const reason = `no PostgreSQL server found (${where}; set FACE_CHECK_PG_BIN or apt-get install postgresql)`;
  if (process.env.FACE_CHECK_REQUIRE_POSTGRES === '1') throw new Error(`PostgreSQL tests required: ${reason}`);
  return reason;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/** uid and gid of the unprivileged user the server runs as when we are root. */
function serverUser(): { uid: number; gid: number } {
  const r = spawnSync('id', ['-u', SERVER_USER], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', SERVER_USER], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) {
    throw new Error(
      `running as root, and there is no '${SERVER_USER}' user to run PostgreSQL as (initdb refuses root; ` +
        `Debian's postgresql package creates that user)`,
    );
  }
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** [command, args] running `bin` as the server user when we are root, else as ourselves. */
function asServerUser(bin: string, args: string[]): [string, string[]] {
  if (!isRoot()) return [bin, args];
  if (fs.existsSync('/usr/sbin/runuser') || fs.existsSync('/sbin/runuser')) {
    return ['runuser', ['-u', SERVER_USER, '--', bin, ...args]];
  }
  return ['setpriv', ['--reuid', SERVER_USER, '--regid', SERVER_USER, '--init-groups', '--', bin, ...args]];
}

async function run(bin: string, args: string[], cwd: string, timeoutMs: number): Promise<void> {
  const [cmd, argv] = asServerUser(bin, args);
  try {
    // cwd: the temp folder, which the server user can enter (it may not be able to enter ours).
    await execFileP(cmd, argv, { cwd, timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C' } });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `${path.basename(bin)} failed: ${e.message.split('\n')[0]}\n${e.stderr ?? ''}${e.stdout ?? ''}`.trim(),
    );
  }
}

function readTail(file: string, chars = 2000): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-chars);
  } catch {
    return '(no log)';
  }
}

// Servers still running when the process exits (a test that threw before stop()): stop them without waiting
// for clients and remove their folders, so no postgres process outlives the test.
const running = new Map<string, { pgCtl: string; dataDir: string }>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [dir, { pgCtl, dataDir }] of running) {
      const [cmd, argv] = asServerUser(pgCtl, ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
      spawnSync(cmd, argv, { cwd: dir, stdio: 'ignore', timeout: 30_000 });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** Starts a fresh PostgreSQL server on a free loopback port with an empty `face_check` database. */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(postgresSkipReason() ?? 'no PostgreSQL server binaries');
  const initdb = path.join(bin, 'initdb');
  const pgCtl = path.join(bin, 'pg_ctl');
  const owner = isRoot() ? serverUser() : undefined;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  try {
    if (owner) fs.chownSync(dir, owner.uid, owner.gid);
    await run(
      initdb,
      ['-D', dataDir, '--auth=trust', `--username=${DB_USER}`, '--encoding=UTF8', '--locale=C', '--no-sync'],
      dir,
      120_000,
    );

    let port = 0;
    const optionsOf = (p: number): string => [
      '-c listen_addresses=127.0.0.1',
      `-p ${p}`,
      // Quoted: pg_ctl hands -o to a shell. The socket lives in the temp folder, not /var/run/postgresql.
      `-c unix_socket_directories='${dir}'`,
      '-c fsync=off',
    ].join(' ');
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const opts = optionsOf(port);
      try {
        await run(pgCtl, ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', opts], dir, 90_000);
        break;
      } catch (err) {
        const log = readTail(logFile);
        // Someone took the port between our probe and the server's bind: try another one.
        if (attempt < 5 && /could not bind|address already in use/i.test(log)) continue;
        throw new Error(`${(err as Error).message}\nserver log (${logFile}):\n${log}`);
      }
    }
    running.set(dir, { pgCtl, dataDir });
    installExitHook();

    const admin = new Client({ host: '127.0.0.1', port, user: DB_USER, database: 'postgres' });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DB_NAME}`);
    } finally {
      await admin.end();
    }

    let stopped: Promise<void> | undefined;
    let halted = false;
    const stop = (): Promise<void> =>
      (stopped ??= (async () => {
        try {
          if (!halted) await run(pgCtl, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60'], dir, 90_000);
        } finally {
          running.delete(dir);
          fs.rmSync(dir, { recursive: true, force: true });
        }
      })());
    const opts = optionsOf(port);
    const restart = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
      await run(pgCtl, ['restart', '-D', dataDir, '-l', logFile, '-m', mode, '-w', '-t', '60', '-o', opts], dir, 90_000);
    };
    const halt = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
      await run(pgCtl, ['stop', '-D', dataDir, '-m', mode, '-w', '-t', '60'], dir, 90_000);
      halted = true;
    };
    const resume = async (): Promise<void> => {
      await run(pgCtl, ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', opts], dir, 90_000);
      halted = false;
    };
    const createDatabase = async (name: string): Promise<string> => {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`database name ${name}: lower-case letters, digits, _`);
      const c = new Client({ host: '127.0.0.1', port, user: DB_USER, database: 'postgres' });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return `postgres://${DB_USER}@127.0.0.1:${port}/${name}`;
    };

    return {
      url: `postgres://${DB_USER}@127.0.0.1:${port}/${DB_NAME}`, port, dataDir, stop, restart, halt, resume, createDatabase,
    };
  } catch (err) {
    // Half-started: stop whatever runs and remove the folder before reporting.
    if (running.has(dir) || fs.existsSync(path.join(dataDir, 'postmaster.pid'))) {
      const [cmd, argv] = asServerUser(pgCtl, ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
      spawnSync(cmd, argv, { cwd: dir, stdio: 'ignore', timeout: 30_000 });
      running.delete(dir);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * A throwaway server and a temp folder holding the cluster's key file (the one every node of a cluster
 * shares), both removed when the test ends.
 */
export async function postgresCluster(t: { teardown(fn: () => unknown): void }): Promise<{ pg: PostgresServer; dir: string; keyFile: string }> {
  const pg = await startPostgres();
  t.teardown(() => pg.stop());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-test-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const keyFile = path.join(dir, 'cluster.key');
  fs.writeFileSync(keyFile, crypto.randomBytes(32), { mode: 0o600 });
  return { pg, dir, keyFile };
}
