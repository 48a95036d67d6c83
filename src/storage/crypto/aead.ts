// AES-256-GCM for values at rest. A sealed value is
//   u8 version (1) | 12-byte random nonce | ciphertext | 16-byte tag
// and its additional authenticated data names its place (database and key), so a value copied onto another
// record, or changed by one bit, fails to open instead of decrypting to garbage.
import crypto from 'node:crypto';

export const SEAL_VERSION = 1;
export const KEY_BYTES = 32;
const NONCE = 12;
const TAG = 16;
const OVERHEAD = 1 + NONCE + TAG;

/** A sealed value that does not open: wrong key, damaged bytes, or a value moved from another place. */
export class SealError extends Error {
  override name = 'SealError';
}

export function sealBytes(key: crypto.KeyObject, plain: Uint8Array, aad: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(plain.byteLength + OVERHEAD);
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

/**
 * The plain bytes of a sealed value (a fresh buffer: Node's decipher writes no caller-given buffer), or a
 * SealError naming `what` (never the content).
 */
export function openBytes(key: crypto.KeyObject, sealed: Uint8Array, aad: Uint8Array, what: string): Buffer {
  if (sealed.byteLength < OVERHEAD) throw new SealError(`${what}: sealed value of ${sealed.byteLength} bytes is too short`);
  if (sealed[0] !== SEAL_VERSION) throw new SealError(`${what}: sealed value version ${sealed[0]}, this program reads ${SEAL_VERSION}`);
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
    throw new SealError(`${what}: sealed value does not open (wrong key, damaged, or moved from another record)`);
  }
}

export function secretKey(bytes: Uint8Array): crypto.KeyObject {
  if (bytes.byteLength !== KEY_BYTES) throw new RangeError(`an AES-256 key is ${KEY_BYTES} bytes, not ${bytes.byteLength}`);
  const copy = Buffer.from(bytes);
  const key = crypto.createSecretKey(copy);  // keeps its own copy
  copy.fill(0);
  return key;
}
