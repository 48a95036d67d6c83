// AES-256-GCM for values at rest. A sealed value is
//   u8 version (1) | 12-byte random nonce | ciphertext | 16-byte tag
// and its additional authenticated data names its place (database and key), so a value copied onto another
// record, or changed by one bit, fails to open instead of decrypting to garbage.
import crypto from 'node:crypto';

export const SEAL_VERSION = 1;
export const KEY_BYTES = 32;
const NONCE = 12;
const TAG = 16;
/** A sealed value's bytes beyond its plain text: version, nonce, tag. */
export const SEAL_OVERHEAD = 1 + NONCE + TAG;

/** A sealed value that does not open: wrong key, damaged bytes, or a value moved from another place. */
export class SealError extends Error {
  override name = 'SealError';
}

export function sealBytes(key: crypto.KeyObject, plain: Uint8Array, aad: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(plain.byteLength + SEAL_OVERHEAD);
  out[0] = SEAL_VERSION;
  const nonce = out.subarray(1, 1 + NONCE);
  crypto.randomFillSync(nonce);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  cipher.setAAD(aad);
  let at = 1 + NONCE;
  for (const part of [cipher.update(plain), cipher.final()]) {
    out.set(part, at);
    at += part.length;
  }
  cipher.getAuthTag().copy(out, at);
  return out;
}

/** Why a sealed value did not open, in the order the checks run. */
export type SealFault = { fault: 'short'; bytes: number } | { fault: 'version'; version: number } | { fault: 'tag' };

/** What a SealFault says of the value at `what` (never its content). */
export function sealFaultMessage(what: string, f: SealFault): string {
  return f.fault === 'short' ? `${what}: sealed value of ${f.bytes} bytes is too short`
    : f.fault === 'version' ? `${what}: sealed value version ${f.version}, this program reads ${SEAL_VERSION}`
    : `${what}: sealed value does not open (wrong key, damaged, or moved from another record)`;
}

/** The plain bytes of a sealed value (a fresh buffer: Node's decipher writes no caller-given buffer), or why not. */
export function openOrFault(key: crypto.KeyObject, sealed: Uint8Array, aad: Uint8Array): Buffer | SealFault {
  if (sealed.byteLength < SEAL_OVERHEAD) return { fault: 'short', bytes: sealed.byteLength };
  if (sealed[0] !== SEAL_VERSION) return { fault: 'version', version: sealed[0] };
  const end = sealed.byteLength - TAG;
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 1 + NONCE), { authTagLength: TAG });
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(end));
  const plain = decipher.update(sealed.subarray(1 + NONCE, end));
  try {
    const rest = decipher.final();
    return rest.length ? Buffer.concat([plain, rest]) : plain;
  } catch {
    plain.fill(0);
    return { fault: 'tag' };
  }
}

/** The plain bytes of a sealed value, or a SealError naming `what` (never the content). */
export function openBytes(key: crypto.KeyObject, sealed: Uint8Array, aad: Uint8Array, what: string): Buffer {
  const opened = openOrFault(key, sealed, aad);
  if (Buffer.isBuffer(opened)) return opened;
  throw new SealError(sealFaultMessage(what, opened));
}

export function secretKey(bytes: Uint8Array): crypto.KeyObject {
  if (bytes.byteLength !== KEY_BYTES) throw new RangeError(`an AES-256 key is ${KEY_BYTES} bytes, not ${bytes.byteLength}`);
  const copy = Buffer.from(bytes);
  const key = crypto.createSecretKey(copy);  // keeps its own copy
  copy.fill(0);
  return key;
}
