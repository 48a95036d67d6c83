// Reads package/package.json out of an npm pack tarball (gzip'd ustar), so a configured package file is
// known to be face-check and its version is known without unpacking it anywhere.
import fs from 'node:fs';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const gunzip = promisify(zlib.gunzip);

/** An npm tarball of the size of this program is a few MB unpacked; this bounds a hostile or wrong file. */
const MAX_UNPACKED_BYTES = 1024 * 1024 * 1024;
const BLOCK = 512;

export interface PackageManifest {
  name: string;
  version: string;
}

export async function readPackageManifest(file: string): Promise<PackageManifest> {
  let tar: Buffer;
  try {
    tar = await gunzip(await fs.promises.readFile(file), { maxOutputLength: MAX_UNPACKED_BYTES });
  } catch (err) {
    throw new Error(`${file} is not a gzip'd npm package: ${(err as Error).message}`);
  }
  for (let offset = 0; offset + BLOCK <= tar.length;) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break; // end of archive
    const name = field(header, 345, 155) ? `${field(header, 345, 155)}/${field(header, 0, 100)}` : field(header, 0, 100);
    const size = parseInt(field(header, 124, 12).trim() || '0', 8);
    const body = offset + BLOCK;
    if (name === 'package/package.json') {
      let manifest: Partial<PackageManifest>;
      try {
        manifest = JSON.parse(tar.subarray(body, body + size).toString('utf8')) as Partial<PackageManifest>;
      } catch {
        throw new Error(`${file}: package/package.json is not JSON`);
      }
      if (typeof manifest.name !== 'string' || typeof manifest.version !== 'string') {
        throw new Error(`${file}: package/package.json lacks name or version`);
      }
      return { name: manifest.name, version: manifest.version };
    }
    offset = body + Math.ceil(size / BLOCK) * BLOCK;
  }
  throw new Error(`${file} holds no package/package.json: not an npm pack tarball`);
}

function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString('utf8');
}
