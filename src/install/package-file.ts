// The package devices install: the tarball GET /licence/v1/package serves and whose sha256 the installation
// command names. It is not published on any registry; the cloud serves the very program it runs, packed
// with `npm pack` once per version into <storage path>/packages (or the file [licensing] package_file
// names, for a cloud installed without npm or one that serves another build). A package is served only if
// it carries the prebuilt addon of every board platform (src/install/device-prebuilds.ts): one without
// would compile the addon on the board, so it is refused with what is missing and how to fix it.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/types';
import { packageRoot } from '../package-root';
import { minimumNode, missingPlatforms, missingPrebuildsMessage, programPrebuilds } from './device-prebuilds';
import { readPackageContents, type PackageContents } from './package-manifest';

export interface PackageInfo {
  path: string;
  /** SHA-256 (hex) of the file's bytes. */
  sha256: string;
  version: string;
  size: number;
  /** The lowest Node version the package's engines.node admits: major.minor.patch. */
  nodeMinimum: string;
}

/** The package lacks prebuilt addons: nothing is served and no installation command is offered. */
export class PackagePrebuildsMissing extends Error {
  constructor(readonly missing: string[], where: { root?: string; packageFile?: string }) {
    super(missingPrebuildsMessage(missing, where));
    this.name = 'PackagePrebuildsMissing';
  }

  /** For devices and operators of any account: what is missing, without the cloud's paths. */
  get publicReason(): string {
    return `this cloud's device package lacks the prebuilt addon for ${this.missing.join(' and ')}, and a device ` +
      'never compiles it; the cloud\'s administrator must add the prebuilds (its log says how)';
  }
}

export interface PackageFileOptions {
  /** The program to pack; default: the running one. */
  root?: string;
  /** The npm executable; default `npm` on PATH. */
  npm?: string;
}

const PACKAGE_NAME = 'face-check';
/** Versions become file names: semver's characters only. */
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]*$/;
const PACK_TIMEOUT_MS = 5 * 60_000;

/** The file a sha256 was computed for: a file removed or replaced since is another file. */
interface Described {
  info: PackageInfo;
  identity: string;
}

export class PackageFile {
  private pending?: Promise<Described>;

  constructor(private readonly config: Config, private readonly options: PackageFileOptions = {}) {}

  /** The package; made (or hashed) on the first call, then cached. Concurrent first calls share one pack. */
  async get(): Promise<PackageInfo> {
    const cached = this.pending;
    if (cached) {
      const current = await cached;
      // A sha256 and size are only served with the bytes they describe: a removed file is made again, a
      // replaced one (a new package_file, a new pack) hashed again.
      if ((await identityOf(current.info.path)) === current.identity) return current.info;
      if (this.pending === cached) this.pending = undefined;
    }
    if (!this.pending) {
      const made = this.make();
      this.pending = made;
      // A failed pack (npm missing, disk full) is tried again by the next call, not cached.
      made.catch(() => { if (this.pending === made) this.pending = undefined; });
    }
    return (await this.pending).info;
  }

  /**
   * Without packing: the prebuilds the package would lack (from the program's prebuilds/ folder, or read
   * from [licensing] package_file). For the warning at start; get() checks the packed file itself.
   */
  async check(): Promise<PackagePrebuildsMissing | undefined> {
    const configured = this.config.licensing.package_file;
    const addons = configured ? (await readPackageContents(configured)).prebuilds : programPrebuilds(this.root());
    const missing = missingPlatforms(addons);
    return missing.length ? new PackagePrebuildsMissing(missing, configured ? { packageFile: configured } : { root: this.root() }) : undefined;
  }

  private root(): string {
    return this.options.root ?? packageRoot();
  }

  private async make(): Promise<Described> {
    const configured = this.config.licensing.package_file;
    if (configured) {
      const contents = await readPackageContents(configured).catch((err: Error) => {
        throw new Error(`[licensing] package_file: ${err.message}`);
      });
      if (contents.name !== PACKAGE_NAME) {
        throw new Error(`[licensing] package_file: ${configured} is the package "${contents.name}", not ${PACKAGE_NAME}`);
      }
      return describe(configured, servable(contents, { packageFile: configured }));
    }
    const root = this.root();
    const version = String((JSON.parse(await fs.promises.readFile(path.join(root, 'package.json'), 'utf8')) as { version?: unknown }).version);
    if (!VERSION.test(version)) throw new Error(`${root}/package.json: version "${version}" is not a usable version`);
    // Not worth an npm pack when the program folder already shows what the package would lack.
    const missing = missingPlatforms(programPrebuilds(root));
    if (missing.length) throw new PackagePrebuildsMissing(missing, { root });
    const dir = path.join(this.config.storage.path, 'packages');
    const target = path.join(dir, `${PACKAGE_NAME}-${version}.tgz`);
    // Packed once per version: a file of this version from an earlier run is the same program, unless it
    // lacks prebuilds (packed before they were made), when it is packed again.
    if (fs.existsSync(target)) {
      const earlier = await readPackageContents(target).catch(() => undefined);
      if (earlier && missingPlatforms(earlier.prebuilds).length === 0) return describe(target, servable(earlier, { root }));
      await fs.promises.rm(target, { force: true });
    }
    return describe(target, await this.pack(root, dir, target));
  }

  /**
   * npm pack into a fresh folder beside the target, checked, then one rename: a reader never sees half a
   * file, and a package without its prebuilds never lands where a restart would take it for the package.
   */
  private async pack(root: string, dir: string, target: string): Promise<Servable> {
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    const work = await fs.promises.mkdtemp(path.join(dir, '.pack-'));
    try {
      await runNpmPack(this.options.npm ?? 'npm', root, work);
      const made = (await fs.promises.readdir(work)).filter((f) => f.endsWith('.tgz'));
      if (made.length !== 1) throw new Error(`npm pack of ${root} left ${made.length} tarballs, expected one`);
      const checked = servable(await readPackageContents(path.join(work, made[0])), { root });
      await fs.promises.rename(path.join(work, made[0]), target);
      return checked;
    } finally {
      await fs.promises.rm(work, { recursive: true, force: true });
    }
  }
}

interface Servable {
  version: string;
  nodeMinimum: string;
}

/** A package's version and Node minimum, once it is known to carry every prebuild. */
function servable(contents: PackageContents, where: { root?: string; packageFile?: string }): Servable {
  const missing = missingPlatforms(contents.prebuilds);
  if (missing.length) throw new PackagePrebuildsMissing(missing, where);
  let nodeMinimum: [number, number, number];
  try {
    nodeMinimum = minimumNode(contents.nodeEngine);
  } catch (err) {
    throw new Error(`${where.packageFile ?? `${where.root}/package.json`}: ${(err as Error).message}`);
  }
  return { version: contents.version, nodeMinimum: nodeMinimum.join('.') };
}

async function identityOf(file: string): Promise<string | undefined> {
  const stat = await fs.promises.stat(file).catch(() => undefined);
  return stat && `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
}

/** Identity taken before hashing: a file replaced while it is hashed is noticed by the next get(). */
async function describe(file: string, { version, nodeMinimum }: Servable): Promise<Described> {
  const identity = await identityOf(file);
  if (identity === undefined) throw new Error(`${file} does not exist`);
  const hash = crypto.createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { info: { path: file, sha256: hash.digest('hex'), version, size, nodeMinimum }, identity };
}

function runNpmPack(npm: string, root: string, destination: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(npm, ['pack', '--pack-destination', destination, '--silent'], {
      cwd: root, stdio: ['ignore', 'ignore', 'pipe'],
    });
    // Not spawn's own timeout option: its timer outlives a child that never started (npm missing).
    const timer = setTimeout(() => child.kill('SIGKILL'), PACK_TIMEOUT_MS);
    const settle = (err?: Error) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    };
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-4000); });
    child.once('error', (err: NodeJS.ErrnoException) => {
      settle(err.code === 'ENOENT'
        ? new Error(`cannot pack the device package: ${npm} was not found. Install npm, or set [licensing] package_file ` +
          'to a tarball made with `npm pack` of this version')
        : new Error(`cannot pack the device package: ${err.message}`));
    });
    child.once('exit', (code, signal) => {
      if (code === 0) settle();
      else {
        settle(new Error(`npm pack of ${root} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}. ` +
          'Set [licensing] package_file to a tarball made with `npm pack` to serve a prepared package instead'));
      }
    });
  });
}
