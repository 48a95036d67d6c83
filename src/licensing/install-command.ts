// The one line an operator pastes on the board to install face-check under a licence. It downloads the
// package the cloud serves, refuses it unless its sha256 is the one in the line (so a tampered or swapped
// package never runs), installs it with npm and lets `face-check device install` write the ini, the pinned
// public key and the systemd unit. FACE_CHECK_PREFIX installs below another root (the tests use a temp dir).
//
// The script is one single-quoted `sh -c '...'` argument, so every input is validated to a character set
// that needs no quoting there nor inside the script's double quotes: no quote, space, $, `, \ or ;.

export interface InstallCommandParams {
  /** The cloud as the device reaches it: http(s)://host[:port][/path], no trailing slash. */
  serverUrl: string;
  /** The licence key, fcl_ + 32 base64url characters. */
  licenceKey: string;
  /** SHA-256 (hex) of the package tarball the cloud serves. */
  packageSha256: string;
  /** SHA-256 (hex) of the cloud's public key (SPKI DER): what the device pins. */
  publicKeySha256: string;
}

/** What the command and the device ini accept: plain characters only (see above). */
export const SERVER_URL = /^https?:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(\/[A-Za-z0-9._~-]+)*$/;
export const LICENCE_KEY = /^fcl_[A-Za-z0-9_-]{32}$/;
export const SHA256_HEX = /^[0-9a-f]{64}$/;

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

  const { serverUrl: url, licenceKey: key, packageSha256: pkg, publicKeySha256: pk } = p;
  const steps = [
    'set -eu',
    'root="${FACE_CHECK_PREFIX:-}"',
    'root="${root%/}"',
    // Installing into the real / needs root; a prefix (a test root) does not.
    '[ -n "$root" ] || [ "$(id -u)" = 0 ] || { echo "face-check: run this as root (sudo -i), or set FACE_CHECK_PREFIX" >&2; exit 1; }',
    'for c in curl sha256sum npm; do command -v "$c" >/dev/null || { echo "face-check: $c is needed (Node.js 20 with npm, curl, coreutils)" >&2; exit 1; }; done',
    't="$(mktemp -d)"',
    'trap "rm -rf \\"\\$t\\"" EXIT',
    `curl -fsS -H "Licence-Key: ${key}" -o "$t/face-check.tgz" "${url}/licence/v1/package"`,
    `echo "${pkg}  $t/face-check.tgz" | sha256sum -c --quiet - || { echo "face-check: the downloaded package is not the one this command names (sha256 differs); nothing installed" >&2; exit 1; }`,
    // onnxruntime-node's postinstall would fetch CUDA files from nuget; face-check loads ONNX Runtime's
    // shared library itself.
    'ONNXRUNTIME_NODE_INSTALL=skip npm install -g --no-audit --no-fund --prefix "$root/usr/local" "$t/face-check.tgz"',
    `"$root/usr/local/bin/face-check" device install --root "\${root:-/}" --server-url "${url}" --licence-key "${key}" --public-key-sha256 "${pk}"`,
  ];
  return `sh -c '${steps.join('; ')}'`;
}
