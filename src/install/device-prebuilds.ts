// What the package devices install must carry so that installing compiles nothing: a prebuilt addon for
// every board platform face-check supports, each built for its machine (the ELF header says which), and a
// Node range the installation command can check on the board before it changes anything.
import fs from 'node:fs';
import path from 'node:path';

export interface DevicePlatform {
  /** The prebuilds/ folder node-gyp-build looks in. */
  platform: string;
  /** e_machine of the addon's ELF header. */
  machine: number;
  /** What `uname -m` prints on such a board. */
  uname: string;
}

export const DEVICE_PLATFORMS: readonly DevicePlatform[] = [
  { platform: 'linux-x64', machine: 62 /* EM_X86_64 */, uname: 'x86_64' },
  { platform: 'linux-arm64', machine: 183 /* EM_AARCH64 */, uname: 'aarch64' },
];

export interface PrebuiltAddon {
  platform: string;
  machine?: number;
}

/** e_machine of a little-endian ELF file from its first bytes; undefined when they are not one. */
export function elfMachineOf(head: Buffer): number | undefined {
  const isElf = head.length >= 20 && head[0] === 0x7f && head.toString('latin1', 1, 4) === 'ELF';
  // EI_DATA 1: little-endian, as both platforms are.
  return isElf && head[5] === 1 ? head.readUInt16LE(18) : undefined;
}

/** The device platforms with no addon built for their machine among `addons`. */
export function missingPlatforms(addons: readonly PrebuiltAddon[]): string[] {
  return DEVICE_PLATFORMS
    .filter((p) => !addons.some((a) => a.platform === p.platform && a.machine === p.machine))
    .map((p) => p.platform);
}

/** The prebuilt addons in a program folder (prebuilds/<platform>/*.node), as npm pack would take them. */
export function programPrebuilds(root: string): PrebuiltAddon[] {
  const dir = path.join(root, 'prebuilds');
  const found: PrebuiltAddon[] = [];
  for (const platform of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const folder = path.join(dir, platform);
    if (!fs.statSync(folder).isDirectory()) continue;
    for (const file of fs.readdirSync(folder).filter((f) => f.endsWith('.node'))) {
      found.push({ platform, machine: elfMachineOf(readHead(path.join(folder, file))) });
    }
  }
  return found;
}

function readHead(file: string): Buffer {
  const head = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    return head.subarray(0, fs.readSync(fd, head, 0, head.length, 0));
  } finally {
    fs.closeSync(fd);
  }
}

/** What an operator is told when the package lacks prebuilds: what is missing, why it matters, the fix. */
export function missingPrebuildsMessage(missing: readonly string[], where: { root?: string; packageFile?: string }): string {
  const what = `the device package lacks the prebuilt addon for ${missing.join(' and ')}, so installing it would ` +
    'compile the addon on the board (and fail on one without a C++ toolchain); installation commands are not offered';
  const fix = where.packageFile
    ? `replace [licensing] package_file (${where.packageFile}) with a package made by \`npm run prebuild\` then \`npm pack\``
    : `run \`npm run prebuild\` in ${where.root} (on linux-x64 with Debian's g++-aarch64-linux-gnu for the arm64 one: ` +
      'apt-get install g++-aarch64-linux-gnu), or set [licensing] package_file to a package made with prebuilds';
  return `${what}. To fix: ${fix}`;
}

/**
 * The lowest Node version a package's engines.node admits, as [major, minor, patch]: the installation
 * command compares the board's `node -v` with it. Only ">=X[.Y[.Z]]" is understood (what face-check declares).
 */
export function minimumNode(engine: string | undefined): [number, number, number] {
  const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(engine ?? '');
  if (!m) throw new Error(`engines.node ${JSON.stringify(engine ?? null)} is not of the form ">=major[.minor[.patch]]"`);
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
}
