// face-check device install: the last step of a licence's installation command, run on the board once
// npm installed the package. It pins the cloud's public key (only if its sha256 is the one the operator
// copied with the command: whoever else answers at that address cannot slip in its own key), writes the
// device ini under --root, and hands over to the service installation (src/install/service-install.ts: the
// unit, the udev rule, and as root on the real / the service user and the start). Re-running it rewrites
// what it wrote and keeps the state folder.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config/load';
import { LICENCE_KEY, SERVER_URL, SHA256_HEX } from '../install/install-command';
import { publicKeySha256 } from '../licensing/licence-document';
import { DEFAULT_DEVICE_PORT, deviceIni, installCameras } from '../install/device-ini';
import { installService, makeDir, serviceLayout, writeFileAtomic } from '../install/service-install';
import { stringFlag, UsageError, type Args, type Io } from './args';

export const DEVICE_USAGE = `  face-check device install --server-url <url> --licence-key <fcl_...> --public-key-sha256 <hex>
                            [--root <dir>] [--camera <source>|none] [--port <n>]`;

export interface DeviceInstallOptions {
  /** Install root: / for the board itself, a folder for a trial or a test. */
  root: string;
  serverUrl: string;
  licenceKey: string;
  publicKeySha256: string;
  /** A source of the addon's registry (not replay), or none; default freenect. */
  camera: string;
  /** The port the device serves on (127.0.0.1); default 8080. */
  port: number;
}

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
  if (!installCameras().includes(camera)) throw new UsageError(`--camera: one of ${installCameras().join(', ')}`);
  const portText = stringFlag(args, 'port') ?? String(DEFAULT_DEVICE_PORT);
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) throw new UsageError('--port: a port number, 1 to 65535');
  return {
    root: path.resolve(stringFlag(args, 'root') || '/'),
    serverUrl: required('server-url', SERVER_URL, 'http(s)://host[:port][/path] without a trailing slash'),
    licenceKey: required('licence-key', LICENCE_KEY, 'a licence key fcl_... (36 characters)'),
    publicKeySha256: required('public-key-sha256', SHA256_HEX, '64 lower-case hex digits'),
    camera,
    port,
  };
}

export async function deviceInstall(o: DeviceInstallOptions, io: Io): Promise<void> {
  // Nothing is written before the key is known to be the cloud's.
  const publicKey = await fetchPinnedPublicKey(o.serverUrl, o.publicKeySha256);

  const layout = serviceLayout(o.root);
  const { etcDir: etc, iniFile, stateDir } = layout;
  const keyFile = `${etc}/licence-server.pem`;

  makeDir(etc, 0o750);
  writeFileAtomic(keyFile, publicKey, 0o644);
  io.out(`wrote ${keyFile} (the cloud's public key, sha256 ${o.publicKeySha256})`);

  const ini = deviceIni({ serverUrl: o.serverUrl, licenceKey: o.licenceKey, publicKeyFile: keyFile, stateDir, camera: o.camera, port: o.port });
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

  installService(layout, io);
  // The one question left once the device runs: with which key a client on the board calls it.
  io.out('clients on this board send an Api-Key: a device key of the licence line (fcd_..., made in the back-office or ' +
    'with face-check licence device-key create on the cloud; the device takes it at its next licence check), or a key made ' +
    `here: sudo -u face-check face-check keys create --config ${iniFile} --role match`);
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
