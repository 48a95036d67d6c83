// face-check device install: the last step of a licence's installation command, run on the board once
// npm installed the package. It pins the cloud's public key (only if its sha256 is the one the operator
// copied with the command: whoever else answers at that address cannot slip in its own key), writes the
// device ini and the systemd unit under --root, and, installing into the real / as root, creates the
// service user and starts the service. Re-running it rewrites what it wrote and keeps the state folder.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config/load';
import { LICENCE_KEY, SERVER_URL, SHA256_HEX } from '../licensing/install-command';
import { publicKeySha256 } from '../licensing/licence-document';
import { deviceIni, INSTALL_CAMERAS, type InstallCamera } from '../ops/device-ini';
import { SERVICE_NAME, SERVICE_USER, STANDARD_STATE_DIR, systemdUnit } from '../ops/systemd-unit';
import { stringFlag, UsageError, type Args, type Io } from './args';

export const DEVICE_USAGE = `  face-check device install --server-url <url> --licence-key <fcl_...> --public-key-sha256 <hex>
                            [--root <dir>] [--camera ${INSTALL_CAMERAS.join('|')}]`;

export interface DeviceInstallOptions {
  /** Install root: / for the board itself, a folder for a trial or a test. */
  root: string;
  serverUrl: string;
  licenceKey: string;
  publicKeySha256: string;
  camera: InstallCamera;
}

/** Groups that give the camera's device nodes: libfreenect's udev rules use plugdev; V4L uses video. */
const CAMERA_GROUPS = ['plugdev', 'video'];
const FETCH_TIMEOUT_MS = 15_000;

export class DeviceInstallError extends Error {}

export async function deviceCommand(args: Args, io: Io): Promise<number> {
  const sub = args.positional[1];
  if (sub !== 'install' || args.positional.length !== 2) throw new UsageError('device: the only subcommand is install');
  await deviceInstall(installOptionsOf(args), io);
  return 0;
}

export function installOptionsOf(args: Args): DeviceInstallOptions {
  const required = (name: string, pattern: RegExp, what: string): string => {
    const value = stringFlag(args, name);
    if (value === undefined) throw new UsageError(`device install needs --${name}`);
    if (!pattern.test(value)) throw new UsageError(`--${name}: expected ${what}`);
    return value;
  };
  const camera = stringFlag(args, 'camera') ?? 'freenect';
  if (!(INSTALL_CAMERAS as readonly string[]).includes(camera)) throw new UsageError(`--camera: one of ${INSTALL_CAMERAS.join(', ')}`);
  return {
    root: path.resolve(stringFlag(args, 'root') || '/'),
    serverUrl: required('server-url', SERVER_URL, 'http(s)://host[:port][/path] without a trailing slash'),
    licenceKey: required('licence-key', LICENCE_KEY, 'a licence key fcl_... (36 characters)'),
    publicKeySha256: required('public-key-sha256', SHA256_HEX, '64 lower-case hex digits'),
    camera: camera as InstallCamera,
  };
}

export async function deviceInstall(o: DeviceInstallOptions, io: Io): Promise<void> {
  // Nothing is written before the key is known to be the cloud's.
  const publicKey = await fetchPinnedPublicKey(o.serverUrl, o.publicKeySha256);

  const prefix = o.root === '/' ? '' : o.root;
  const etc = `${prefix}/etc/face-check`;
  const iniFile = `${etc}/face-check.ini`;
  const keyFile = `${etc}/licence-server.pem`;
  const stateDir = `${prefix}${STANDARD_STATE_DIR}`;
  const unitFile = `${prefix}/etc/systemd/system/${SERVICE_NAME}.service`;

  fs.mkdirSync(etc, { recursive: true, mode: 0o755 });
  writeFileAtomic(keyFile, publicKey, 0o644);
  io.out(`wrote ${keyFile} (the cloud's public key, sha256 ${o.publicKeySha256})`);

  const ini = deviceIni({ serverUrl: o.serverUrl, licenceKey: o.licenceKey, publicKeyFile: keyFile, stateDir, camera: o.camera });
  const previous = fs.existsSync(iniFile) ? fs.readFileSync(iniFile, 'utf8') : undefined;
  if (previous !== undefined && previous !== ini) {
    writeFileAtomic(`${iniFile}.previous`, previous, 0o600);
    io.out(`kept the former ${iniFile} as ${iniFile}.previous`);
  }
  writeFileAtomic(iniFile, ini, 0o600);
  // The service must start with it: a file that does not load is an installation error now, not at boot.
  const config = loadConfig(iniFile);
  if (config.licence.development || config.server.mode !== 'device') throw new DeviceInstallError(`${iniFile} does not describe a licensed device`);
  io.out(`wrote ${iniFile} (0600: it holds the licence key)`);

  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(stateDir, 0o700);
  io.out(`state folder ${stateDir} (0700; kept as it was when it existed)`);

  fs.mkdirSync(path.dirname(unitFile), { recursive: true, mode: 0o755 });
  writeFileAtomic(unitFile, systemdUnit({
    binary: `${prefix}/usr/local/bin/face-check`,
    configFile: iniFile,
    stateDir,
    nodeDir: path.dirname(process.execPath),
    supplementaryGroups: existingGroups(prefix, CAMERA_GROUPS),
  }), 0o644);
  io.out(`wrote ${unitFile}`);
  if (/^\/(root|home)(\/|$)/.test(process.execPath)) {
    io.err(`face-check: warning: node runs from ${process.execPath}, which the service cannot see (ProtectHome=yes); install Node.js system-wide`);
  }

  const steps = completionSteps(iniFile, stateDir);
  const isRoot = process.getuid?.() === 0;
  if (o.root === '/' && isRoot && commandExists('systemctl')) {
    if (!userExists(SERVICE_USER)) run(io, steps.createUser);
    for (const step of steps.always) run(io, step);
    io.out(`face-check is installed and running: systemctl status ${SERVICE_NAME}, journalctl -u ${SERVICE_NAME}`);
  } else {
    const why = o.root !== '/' ? `installed under ${o.root}` : !isRoot ? 'not running as root' : 'systemctl not found';
    io.out(`${why}: to finish, run as root:`);
    io.out(`  id ${SERVICE_USER} >/dev/null 2>&1 || ${steps.createUser.join(' ')}`);
    for (const step of steps.always) io.out(`  ${step.join(' ')}`);
  }
}

/** GET <server>/licence/v1/public-key, accepted only when its SHA-256 is the pinned one. */
async function fetchPinnedPublicKey(serverUrl: string, pinnedSha256: string): Promise<string> {
  const url = `${serverUrl}/licence/v1/public-key`;
  let body: unknown;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!res.ok) throw new Error(`answered ${res.status}`);
    body = await res.json();
  } catch (err) {
    throw new DeviceInstallError(`cannot get the cloud's public key from ${url}: ${(err as Error).message}`);
  }
  const publicKey = (body as { publicKey?: unknown } | null)?.publicKey;
  if (typeof publicKey !== 'string') throw new DeviceInstallError(`${url} did not answer a public key`);
  let actual: string;
  try {
    actual = publicKeySha256(publicKey);
  } catch {
    throw new DeviceInstallError(`${url} answered something that is not a public key`);
  }
  if (actual !== pinnedSha256) {
    throw new DeviceInstallError(`refusing the public key of ${serverUrl}: its sha256 is ${actual}, the installation ` +
      `command names ${pinnedSha256}. Check the address, or copy the command again from the licence line; nothing was written`);
  }
  return publicKey;
}

function completionSteps(iniFile: string, stateDir: string): { createUser: string[]; always: string[][] } {
  return {
    createUser: ['useradd', '--system', '--user-group', '--home-dir', stateDir, '--no-create-home', '--shell', '/usr/sbin/nologin', SERVICE_USER],
    always: [
      ['chown', '-R', `${SERVICE_USER}:${SERVICE_USER}`, stateDir],
      ['chown', `${SERVICE_USER}:${SERVICE_USER}`, iniFile],
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', SERVICE_NAME],
      // restart, not start: a re-run's new ini takes effect.
      ['systemctl', 'restart', SERVICE_NAME],
    ],
  };
}

/** Temp file then rename: a crash never leaves half a config; the mode is set whatever the umask. */
function writeFileAtomic(file: string, text: string, mode: number): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode });
  fs.chmodSync(temp, mode);
  fs.renameSync(temp, file);
}

/** A unit naming a group that does not exist fails to start: only those of the target system's /etc/group. */
function existingGroups(prefix: string, wanted: string[]): string[] {
  let groupFile: string;
  try {
    groupFile = fs.readFileSync(`${prefix}/etc/group`, 'utf8');
  } catch {
    return wanted; // an empty test root: the unit as a real board gets it
  }
  const names = new Set(groupFile.split('\n').map((line) => line.split(':')[0]));
  return wanted.filter((g) => names.has(g));
}

function commandExists(name: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir && fs.existsSync(path.join(dir, name)));
}

function userExists(name: string): boolean {
  try {
    execFileSync('id', [name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function run(io: Io, [command, ...args]: string[]): void {
  io.out(`$ ${command} ${args.join(' ')}`);
  execFileSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
}
