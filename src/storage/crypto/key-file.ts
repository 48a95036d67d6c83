// The key-encryption key: exactly 32 raw bytes in a file of its own ([storage] key_file). It only wraps the
// store's data key, so it can live somewhere the store's disk does not: a TPM-sealed secret, a systemd
// credential ($CREDENTIALS_DIRECTORY), a mounted secret.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { KEY_BYTES } from './aead';

/** The key file when [storage] key_file is empty: inside the store folder, so 0700 covers it too. */
export const DEFAULT_KEY_FILE = 'face-check.key';

/** The store cannot be unlocked: missing, unreadable, malformed or wrong key file. Its message is one line. */
export class StoreKeyError extends Error {
  override name = 'StoreKeyError';
}

/** The key file's bytes, or undefined when it does not exist. */
export function readKeyFile(file: string): Buffer | undefined {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new StoreKeyError(`storage key file ${file} is unreadable (${code ?? (err as Error).message})`);
  }
  if (bytes.length !== KEY_BYTES) {
    const size = bytes.length;
    bytes.fill(0);
    throw new StoreKeyError(`storage key file ${file} holds ${size} bytes; a key file is exactly ${KEY_BYTES} random bytes`);
  }
  return bytes;
}

/**
 * Makes a key file of 32 random bytes, mode 0600, unless one appeared meanwhile (exclusive create: two
 * processes agree on one); returns the key that is in the file.
 */
export function createKeyFile(file: string): Buffer {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = crypto.randomBytes(KEY_BYTES);
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new StoreKeyError(`storage key file ${file} cannot be created (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    key.fill(0);
    return readKeyFile(file)!;
  }
  try {
    fs.writeSync(fd, key);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  syncFolder(path.dirname(file));
  return key;
}

/** Replaces (or creates) the key file atomically: a 0600 temporary file in the same folder, synced, renamed. */
export function writeKeyFileAtomically(file: string, key: Uint8Array): void {
  writePrivateFileAtomically(file, key);
}

/**
 * Replaces (or creates) a file only this user reads, atomically: a 0600 temporary file in the same folder
 * (made 0700 when missing), synced, renamed over it, the folder synced. A crash leaves the old file or the new.
 */
export function writePrivateFileAtomically(file: string, bytes: Uint8Array): void {
  const folder = path.dirname(file);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  const temp = path.join(folder, `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`);
  const fd = fs.openSync(temp, 'wx', 0o600);
  try {
    fs.writeSync(fd, bytes);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temp, file);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
  syncFolder(folder);
}

/** Makes a rename or create in `folder` durable, where the filesystem syncs folders. */
export function syncFolder(folder: string): void {
  // The rename or create is durable only once the folder entry is: sync it where the platform allows.
  let fd: number | undefined;
  try {
    fd = fs.openSync(folder, 'r');
    fs.fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on a folder; the file's own data is synced already
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
