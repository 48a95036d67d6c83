// The signed licence document: what the cloud's licence server answers to a device's check, and what the
// device trusts. The cloud signs the document's exact bytes with its service key pair (RSASSA-PKCS1-v1_5,
// SHA-256, the pair that signs responses to signed requests); the device verifies them against the public
// key pinned in its ini ([licence] public_key_file) before it reads a single field, so a document changed
// by one byte, or signed by any other key, is refused. The request's nonce is echoed inside the signed
// bytes, so an old document replayed by someone between the device and the cloud is refused too.
import crypto from 'node:crypto';
import type { Grant, LicenceLimits } from '../domain/grants';
import { parseGrants } from '../domain/grants';
import { isRole, type Role } from '../domain/roles';

export const DOCUMENT_FORMAT = 'face-check-licence/1';

export interface LicenceDocument {
  format: typeof DOCUMENT_FORMAT;
  licenceId: string;
  accountId: string;
  label: string;
  /** Always 'active' in a signed document: a refused check gets an error, not a document. */
  status: 'active';
  grants: Grant[];
  limits: LicenceLimits;
  /** The licence's own expiry (ISO 8601), or null. */
  licenceExpires: string | null;
  /** The device the licence is bound to: the fingerprint the check sent. */
  device: { fingerprint: string };
  /** SHA-256 (hex) of the licence key the device sent: ties the document to that key. */
  licenceKeySha256: string;
  /** The nonce of the check this document answers (base64url). */
  nonce: string;
  /** When the cloud issued it (ISO 8601). */
  issued: string;
  /** A running device checks again this often. */
  checkIntervalSeconds: number;
  /** A running device serves on this document until then at most (ISO 8601), even if re-checks fail. */
  validUntil: string;
  /** The licence line's active device API keys, which the device accepts beside its own; absent from a cloud
   *  that predates them (then none). */
  deviceKeys?: DocumentDeviceKey[];
}

/**
 * A device API key as the device learns it: its SHA-256, never the key. A bare hash is enough here, with no
 * salt or slow hash, because the key is 192 random bits (licence-device-keys.ts): a hash of it cannot be
 * turned back into the key by guessing, which is what salts and slow hashes defend low-entropy passwords
 * against. The device hashes each Api-Key it is sent and looks the hash up.
 */
export interface DocumentDeviceKey {
  /** The id the licence line lists the key by. */
  keyId: string;
  /** SHA-256 (hex) of the key. */
  keySha256: string;
  role: Role;
  /** The client's RSA public key (PEM) when requests made with the key must be signed (spec 5). */
  signingPublicKey?: string;
}

/** Device keys a document may carry: the licence line's active keys, with room to spare. */
export const MAX_DOCUMENT_DEVICE_KEYS = 100;

/** The licence check's 200 body. */
export interface SignedLicence {
  /** The document's JSON, UTF-8, base64: the exact bytes signed. */
  document: string;
  /** RSASSA-PKCS1-v1_5 SHA-256 over those bytes, base64. */
  signature: string;
  algorithm: 'rsa-sha256';
}

export class LicenceDocumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LicenceDocumentError';
  }
}

export function signLicenceDocument(doc: LicenceDocument, privateKey: crypto.KeyLike): SignedLicence {
  const bytes = Buffer.from(JSON.stringify(doc), 'utf8');
  const signature = crypto.sign('sha256', bytes, privateKey);
  return { document: bytes.toString('base64'), signature: signature.toString('base64'), algorithm: 'rsa-sha256' };
}

/** SHA-256 (hex) of a public key's DER (SubjectPublicKeyInfo): what an installation command pins. */
export function publicKeySha256(publicKey: crypto.KeyLike): string {
  const der = crypto.createPublicKey(publicKey).export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(der).digest('hex');
}

/**
 * The document inside `signed` once its signature verifies against `publicKey` and its fields have the
 * expected types; throws LicenceDocumentError saying why not. Checks of meaning (nonce, fingerprint, time)
 * are the caller's: see checkDocumentFor.
 */
export function verifyLicenceDocument(signed: unknown, publicKey: crypto.KeyLike): LicenceDocument {
  if (typeof signed !== 'object' || signed === null) throw new LicenceDocumentError('the answer is not a signed licence document');
  const s = signed as Partial<SignedLicence>;
  if (s.algorithm !== 'rsa-sha256' || typeof s.document !== 'string' || typeof s.signature !== 'string') {
    throw new LicenceDocumentError('the answer is not a signed licence document (document, signature, algorithm rsa-sha256)');
  }
  const bytes = Buffer.from(s.document, 'base64');
  let ok = false;
  try {
    ok = crypto.verify('sha256', bytes, publicKey, Buffer.from(s.signature, 'base64'));
  } catch {
    ok = false;
  }
  if (!ok) throw new LicenceDocumentError('the licence document\'s signature does not verify against the pinned public key');
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new LicenceDocumentError('the signed licence document is not JSON');
  }
  return checkedShape(doc);
}

function checkedShape(value: unknown): LicenceDocument {
  const bad = (field: string) => new LicenceDocumentError(`the signed licence document has no valid ${field}`);
  if (typeof value !== 'object' || value === null) throw bad('body');
  const d = value as Record<string, unknown>;
  if (d.format !== DOCUMENT_FORMAT) throw bad(`format (expected ${DOCUMENT_FORMAT})`);
  for (const f of ['licenceId', 'accountId', 'label', 'licenceKeySha256', 'nonce', 'issued', 'validUntil'] as const) {
    if (typeof d[f] !== 'string') throw bad(f);
  }
  if (d.status !== 'active') throw bad('status');
  if (!Array.isArray(d.grants)) throw bad('grants');
  try {
    parseGrants(d.grants as string[]);
  } catch (err) {
    throw bad(`grants (${(err as Error).message})`);
  }
  const limits = d.limits as Record<string, unknown> | undefined;
  if (typeof limits !== 'object' || limits === null || !(limits.maxPersons === null || Number.isSafeInteger(limits.maxPersons))) throw bad('limits');
  if (!(d.licenceExpires === null || typeof d.licenceExpires === 'string')) throw bad('licenceExpires');
  const device = d.device as Record<string, unknown> | undefined;
  if (typeof device !== 'object' || device === null || typeof device.fingerprint !== 'string') throw bad('device');
  if (!Number.isSafeInteger(d.checkIntervalSeconds) || (d.checkIntervalSeconds as number) < 1) throw bad('checkIntervalSeconds');
  for (const f of ['issued', 'validUntil'] as const) if (Number.isNaN(Date.parse(d[f] as string))) throw bad(f);
  if (d.licenceExpires !== null && Number.isNaN(Date.parse(d.licenceExpires as string))) throw bad('licenceExpires');
  if (d.deviceKeys !== undefined && !validDeviceKeys(d.deviceKeys)) throw bad('deviceKeys');
  return value as LicenceDocument;
}

function validDeviceKeys(value: unknown): boolean {
  if (!Array.isArray(value) || value.length > MAX_DOCUMENT_DEVICE_KEYS) return false;
  return value.every((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return false;
    const k = entry as Record<string, unknown>;
    return typeof k.keyId === 'string' && typeof k.keySha256 === 'string' && /^[0-9a-f]{64}$/.test(k.keySha256)
      && typeof k.role === 'string' && isRole(k.role)
      && (k.signingPublicKey === undefined || typeof k.signingPublicKey === 'string');
  });
}

export interface DocumentExpectation {
  /** The nonce the device sent; omitted only for a stored document read at an offline start. */
  nonce?: string;
  fingerprint: string;
  licenceKey: string;
  now: Date;
}

/** Throws LicenceDocumentError unless the verified document answers this device's check and is good now. */
export function checkDocumentFor(doc: LicenceDocument, want: DocumentExpectation): void {
  const keySha = crypto.createHash('sha256').update(want.licenceKey, 'utf8').digest('hex');
  if (doc.licenceKeySha256 !== keySha) throw new LicenceDocumentError('the licence document is for another licence key');
  if (want.nonce !== undefined && doc.nonce !== want.nonce) {
    throw new LicenceDocumentError('the licence document does not answer this check (nonce differs: an old document replayed?)');
  }
  if (doc.device.fingerprint !== want.fingerprint) throw new LicenceDocumentError('the licence document is bound to another device');
  const now = want.now.getTime();
  if (doc.licenceExpires !== null && Date.parse(doc.licenceExpires) <= now) {
    throw new LicenceDocumentError(`the licence expired on ${doc.licenceExpires}`);
  }
  if (Date.parse(doc.validUntil) <= now) throw new LicenceDocumentError(`the licence document ran out at ${doc.validUntil}`);
}
