// The ini a device runs with, as the installation writes it: device mode on the loopback interface, the
// state folder, the camera, and the licence (the cloud's address, the key, the pinned public key). Keys
// left out take their defaults (README "ini reference"); [licence] development is left out, so false.
import { cameraCatalog, findCameraSource } from '../device/camera-catalog';

/** Sources an installed device may run: every compiled one but replay (which needs a recording on the board), or none. */
export function installCameras(): string[] {
  return [...cameraCatalog().map((s) => s.name).filter((name) => name !== 'replay'), 'none'];
}

/** The port an installed device serves on when the command names none. */
export const DEFAULT_DEVICE_PORT = 8080;

export interface DeviceIniParams {
  serverUrl: string;
  licenceKey: string;
  /** Absolute paths (with the install root in front). */
  publicKeyFile: string;
  stateDir: string;
  /** One of installCameras(). */
  camera: string;
  port: number;
}

/** Characters that end or split an ini value (comments, new lines, quotes) are refused, not escaped. */
const PLAIN_VALUE = /^[A-Za-z0-9_./:+@[\]-]+$/;

export function deviceIni(p: DeviceIniParams): string {
  for (const [name, value] of Object.entries(p)) {
    if (!PLAIN_VALUE.test(String(value))) throw new Error(`${name} cannot be written to an ini file: ${JSON.stringify(value)}`);
  }
  if (!installCameras().includes(p.camera)) throw new Error(`camera: one of ${installCameras().join(', ')}`);
  if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) throw new Error(`port: 1 to 65535, not ${p.port}`);
  return [
    '; face-check device configuration, written by `face-check device install` (the licence\'s installation',
    '; command). Running that command again rewrites this file (the previous one is kept as face-check.ini.previous).',
    '; Keys not listed take their defaults: README.md "ini reference" and docs/device.md.',
    '',
    '[server]',
    '; device: the depth camera and the local person API, for programs on this machine only (127.0.0.1)',
    'mode = device',
    'host = 127.0.0.1',
    `port = ${p.port}`,
    '',
    '[storage]',
    '; persons, face templates and the key that seals them (made 0600 at first start): the only folder the',
    '; service writes',
    `path = ${p.stateDir}`,
    '',
    '[camera]',
    `; ${installCameras().join(' | ')} (\`face-check cameras\` lists each, and whether it can open here)`,
    `source = ${p.camera}`,
    '',
    ...sourceSection(p.camera),
    '[licence]',
    '; The cloud this device checks its licence with, at every start (internet needed then) and regularly after.',
    `server_url = ${p.serverUrl}`,
    '; The licence key: a secret, which is why this file is readable by the service user only.',
    `key = ${p.licenceKey}`,
    '; The cloud\'s public key. Licence documents must be signed with it; the installation command named its sha256,',
    '; so it is the cloud\'s own key, not one of whoever answered the installation.',
    `public_key_file = ${p.publicKeyFile}`,
    '',
  ].join('\n');
}

/** The chosen source's section with every option it takes commented out at its default, to be edited in place. */
function sourceSection(name: string): string[] {
  const source = findCameraSource(name);
  const options = source?.options.filter((o) => o.settable && o.key !== 'photos') ?? [];
  if (!source || !options.length) return [];
  return [
    `[camera.${name}]`,
    `; ${source.summary}. Every key is optional; the defaults are shown.`,
    ...options.flatMap((o) => [`; ${o.doc}${o.choices ? ` (${o.choices.join(' | ')})` : ''}`, `;${o.key} = ${o.default}`]),
    '',
  ];
}
