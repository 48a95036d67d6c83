// Reads an npm pack tarball (gzip'd ustar) without unpacking it anywhere: package/package.json (so a
// configured package file is known to be face-check and its version and Node range are known) and the
// prebuilt addons under package/prebuilds/<platform>/ with the machine their ELF header names.
import fs from 'node:fs';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { elfMachineOf } from './device-prebuilds';

const gunzip = promisify(zlib.gunzip);

/** An npm tarball of the size of this program is a few MB unpacked; this bounds a hostile or wrong file. */
const MAX_UNPACKED_BYTES = 1024 * 1024 * 1024;
const BLOCK = 512;
const PREBUILD = /^package\/prebuilds\/([^/]+)\/[^/]+\.node$/;

export interface PackageManifest {
  name: string;
  version: string;
}

export interface PackageContents extends PackageManifest {
  /** package.json engines.node, when the package names one. */
  nodeEngine?: string;
  /** Every prebuilt addon: its folder (linux-x64, ...) and the ELF machine of its header (undefined: not ELF). */
  prebuilds: { platform: string; machine?: number }[];
}

export async function readPackageManifest(file: string): Promise<PackageManifest> {
  const { name, version } = await readPackageContents(file);
  return { name, version };
}

export async function readPackageContents(file: string): Promise<PackageContents> {
  let tar: Buffer;
  try {
    tar = await gunzip(await fs.promises.readFile(file), { maxOutputLength: MAX_UNPACKED_BYTES });
  } catch (err) {
    throw new Error(`${file} is not a gzip'd npm package: ${(err as Error).message}`);
  }
  let manifest: (PackageManifest & { nodeEngine?: string }) | undefined;
  const prebuilds: PackageContents['prebuilds'] = [];
  for (let offset = 0; offset + BLOCK <= tar.length;) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break; // end of archive
    const name = field(header, 345, 155) ? `${field(header, 345, 155)}/${field(header, 0, 100)}` : field(header, 0, 100);
    const size = parseInt(field(header, 124, 12).trim() || '0', 8);
    const body = offset + BLOCK;
    const content = tar.subarray(body, body + size);
    if (name === 'package/package.json') manifest = parseManifest(file, content);
    const prebuild = PREBUILD.exec(name);
    if (prebuild) prebuilds.push({ platform: prebuild[1], machine: elfMachineOf(content) });
    offset = body + Math.ceil(size / BLOCK) * BLOCK;
  }
  if (!manifest) throw new Error(`${file} holds no package/package.json: not an npm pack tarball`);
  return { ...manifest, prebuilds };
}

function parseManifest(file: string, bytes: Buffer): PackageManifest & { nodeEngine?: string } {
  let manifest: Partial<PackageManifest> & { engines?: { node?: unknown } };
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as typeof manifest;
  } catch {
    throw new Error(`${file}: package/package.json is not JSON`);
  }
  if (typeof manifest.name !== 'string' || typeof manifest.version !== 'string') {
    throw new Error(`${file}: package/package.json lacks name or version`);
  }
  const node = manifest.engines?.node;
  return { name: manifest.name, version: manifest.version, ...(typeof node === 'string' ? { nodeEngine: node } : {}) };
}

function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString('utf8');
}
