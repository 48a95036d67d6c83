// The one line an operator pastes on the board to install face-check under a licence. It first checks the
// board (Linux on x86_64 or aarch64, the package's Node version, the tools it runs) and names everything
// missing before it changes anything. It downloads the package the cloud serves, refuses it unless its
// sha256 is the one in the line (so a tampered or swapped package never runs), installs it with npm and lets
// `face-check device install` write the ini, the pinned public key and the systemd unit. FACE_CHECK_PREFIX
// installs below another root (the tests use a temp dir).
//
// npm runs no install script (--ignore-scripts): the dependencies' scripts would only build what their
// prebuilt packages already hold (lmdb, msgpackr-extract) or fetch GPU files face-check never loads
// (onnxruntime-node), and npm 11 lists every package it runs a script of under `allowScripts`, whose
// project field a global install does not read (npm 12 skips such scripts). face-check's own step then runs
// explicitly: it fetches the models and checks the prebuilt addon loads, and never compiles on a device.
//
// The script is one single-quoted `sh -c '...'` argument, so every input is validated to a character set
// that needs no quoting there nor inside the script's double quotes: no quote, space, $, `, \ or ;.

import { DEVICE_PLATFORMS } from './device-prebuilds';
import { installChoiceFlags, type InstallChoice } from './install-choice';

export interface InstallCommandParams {
  /** The cloud as the device reaches it: http(s)://host[:port][/path], no trailing slash. */
  serverUrl: string;
  /** The licence key, fcl_ + 32 base64url characters. */
  licenceKey: string;
  /** SHA-256 (hex) of the package tarball the cloud serves. */
  packageSha256: string;
  /** SHA-256 (hex) of the cloud's public key (SPKI DER): what the device pins. */
  publicKeySha256: string;
  /** The lowest Node version the package admits, major.minor.patch. */
  nodeMinimum: string;
  /** The camera and port the device is set up with (default: device install's). */
  choice?: InstallChoice;
}

/** What the command and the device ini accept: plain characters only (see above). */
export const SERVER_URL = /^https?:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(\/[A-Za-z0-9._~-]+)*$/;
export const LICENCE_KEY = /^fcl_[A-Za-z0-9_-]{32}$/;
export const SHA256_HEX = /^[0-9a-f]{64}$/;
const NODE_VERSION = /^(\d{1,4})\.(\d{1,4})\.(\d{1,4})$/;

export class InstallCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InstallCommandError';
  }
}

export function installCommand(p: InstallCommandParams): string {
  if (!SERVER_URL.test(p.serverUrl)) {
    throw new InstallCommandError(`server URL must be http(s)://host[:port][/path] without a trailing slash or special characters, got ${JSON.stringify(p.serverUrl)}`);
  }
  if (!LICENCE_KEY.test(p.licenceKey)) throw new InstallCommandError('licence key must be fcl_ and 32 base64url characters');
  if (!SHA256_HEX.test(p.packageSha256)) throw new InstallCommandError('package sha256 must be 64 lower-case hex digits');
  if (!SHA256_HEX.test(p.publicKeySha256)) throw new InstallCommandError('public key sha256 must be 64 lower-case hex digits');
  const node = NODE_VERSION.exec(p.nodeMinimum);
  if (!node) throw new InstallCommandError('Node minimum must be major.minor.patch');

  const { serverUrl: url, licenceKey: key, packageSha256: pkg, publicKeySha256: pk, nodeMinimum } = p;
  const [major, minor, patch] = node.slice(1).map(Number);
  const machines = DEVICE_PLATFORMS.map((d) => d.uname);
  const fail = (what: string) => `{ echo "face-check: ${what}" >&2; ok=0; }`;
  const steps = [
    'set -eu',
    'root="${FACE_CHECK_PREFIX:-}"',
    'root="${root%/}"',
    // The board first, every finding named, before anything is written or downloaded.
    'ok=1',
    // Installing into the real / needs root; a prefix (a test root) does not.
    `[ -n "$root" ] || [ "$(id -u)" = 0 ] || ${fail('run this as root (sudo -i), or set FACE_CHECK_PREFIX')}`,
    `case "$(uname -s)/$(uname -m)" in ${machines.map((m) => `Linux/${m}`).join('|')}) ;; *) ${fail(
      `this board is $(uname -s) $(uname -m): face-check runs on Linux on ${machines.join(' or ')}`)};; esac`,
    `for c in curl sha256sum npm; do command -v "$c" >/dev/null || ${fail('$c is missing (install curl, coreutils, and Node.js with npm)')}; done`,
    // node -v is vMAJOR.MINOR.PATCH; compared field by field with the package's engines.node.
    `if command -v node >/dev/null; then v="$(node -v)"; v="\${v#v}"; a="\${v%%.*}"; r="\${v#*.}"; b="\${r%%.*}"; c="\${r#*.}"; c="\${c%%[!0-9]*}"; ` +
      `{ [ "$a" -gt ${major} ] || { [ "$a" -eq ${major} ] && { [ "$b" -gt ${minor} ] || { [ "$b" -eq ${minor} ] && [ "$c" -ge ${patch} ]; }; }; }; } 2>/dev/null || ` +
      `${fail(`Node.js $v is too old: face-check needs ${nodeMinimum} or later`)}; ` +
      `else ${fail(`Node.js ${nodeMinimum} or later is missing`)}; fi`,
    '[ "$ok" = 1 ] || { echo "face-check: nothing was installed or changed" >&2; exit 1; }',
    't="$(mktemp -d)"',
    'trap "rm -rf \\"\\$t\\"" EXIT',
    `curl -fsS -H "Licence-Key: ${key}" -o "$t/face-check.tgz" "${url}/licence/v1/package"`,
    `echo "${pkg}  $t/face-check.tgz" | sha256sum -c --quiet - || { echo "face-check: the downloaded package is not the one this command names (sha256 differs); nothing installed" >&2; exit 1; }`,
    'npm install -g --ignore-scripts --no-audit --no-fund --prefix "$root/usr/local" "$t/face-check.tgz"',
    'node "$root/usr/local/lib/node_modules/face-check/scripts/install.js"',
    `"$root/usr/local/bin/face-check" device install --root "\${root:-/}" --server-url "${url}" --licence-key "${key}" --public-key-sha256 "${pk}"${installChoiceFlags(p.choice)}`,
  ];
  return `sh -c '${steps.join('; ')}'`;
}
