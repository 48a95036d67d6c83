// Device API keys: keys an operator makes on a licence line for the licensed device to accept (beside the keys
// made on the board itself). Like the account's cloud keys (./api-keys.ts), a key is shown once when it is made
// and kept only as its SHA-256; the records live inside their licence record (LMDB) or row (PostgreSQL,
// licences.device_keys), so a key is read, written and moved with its licence in one transaction.
import crypto from 'node:crypto';
import type { Role } from '../domain/roles';

export interface DeviceKeyRecord {
  /** Public identifier (first 12 hex digits of the hash), used to list and revoke. */
  keyId: string;
  /** SHA-256 (hex) of the key: what the device is told and compares with. */
  keySha256: string;
  role: Role;
  label: string;
  created: string;
  /** When revoked, else null. Revoked keys stay listed (audit) and leave the licence document. */
  revoked: string | null;
  /** The client's RSA public key (PEM, SPKI) when requests made with the key must be signed (spec 5). */
  signingPublicKey?: string;
}

/**
 * "fcd_" + 32 base64url characters (192 random bits): the same shape as a cloud key ("fc_"), with a prefix of
 * its own so that anyone holding a key sees where it works (a cloud key is refused by a device, and the other
 * way round).
 */
export function generateDeviceKey(): string {
  return `fcd_${crypto.randomBytes(24).toString('base64url')}`;
}

export function deviceKeySha256(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The licence record's device keys (a record stored before they existed has none). */
export function deviceKeysOf(record: { deviceKeys?: DeviceKeyRecord[] }): DeviceKeyRecord[] {
  return record.deviceKeys ?? [];
}
