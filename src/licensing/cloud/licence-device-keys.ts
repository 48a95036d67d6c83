// The device API keys of a licence line: the operator creates, lists and revokes the keys its licensed device
// accepts, with the roles of cloud keys (full, enrol, match) and, where the client signs its requests, a
// signing key (spec 5). A key is answered once, when it is made; the cloud keeps its SHA-256 and the device
// learns that hash (never the key) from its next signed licence document (licence-server.ts), so a new key
// works and a revoked one is refused from the device's next check. Every change is decided on the licence
// record inside its own transaction (the key count, a revoked licence), as the licence's other changes are.
import type { Role } from '../../domain/roles';
import type { ApiError, ErrorCatalog } from '../../errors';
import {
  deviceKeysOf, deviceKeySha256, generateDeviceKey, type DeviceKeyRecord,
} from '../../storage/device-keys';
import type { ChangeOutcome, LicenceRecord } from '../../storage/records';
import type { AsyncStore } from '../../storage/interfaces';
import type { DocumentDeviceKey } from '../licence-document';
import { signingKeyOf } from '../../accounts/signing-key-request';
import type { LicenceScope, LicenceService } from './licences';

/** Active keys one licence line may hold: a board serves a handful of clients, and each key rides in every document. */
export const MAX_ACTIVE_DEVICE_KEYS = 20;
/** Revoked keys kept listed (audit), the most recent first; older ones leave the list. */
export const MAX_LISTED_REVOKED_DEVICE_KEYS = 50;
export const MAX_DEVICE_KEY_LABEL = 200;

export interface DeviceKeyRequest {
  role: Role;
  label?: string;
  /** Make a signing key pair: the private half is answered once, never stored. */
  signing?: boolean;
  /** The client's own RSA public key (PEM) for request signing. */
  publicKey?: string;
}

/** A device key as the licence line lists it: never the key, never its hash. */
export interface DeviceKeyView {
  keyId: string;
  licenceId: string;
  role: Role;
  label: string;
  created: string;
  revoked: string | null;
  signing: boolean;
}

/** The answer that makes a key: the only place the key (and a generated signing key) ever appears. */
export interface CreatedDeviceKey extends DeviceKeyView {
  key: string;
  /** PKCS#8 PEM private key, when the key signs and the pair was made here. */
  signingKey?: string;
}

export interface DeviceKeyServiceDeps {
  store: AsyncStore;
  errors: ErrorCatalog;
  now: () => Date;
  /** Whose licence a call may touch (an operator's own, the administrator's any). */
  licences: Pick<LicenceService, 'record'>;
}

export class DeviceKeyService {
  private readonly store: AsyncStore;

  constructor(private readonly deps: DeviceKeyServiceDeps) {
    this.store = deps.store;
  }

  /** The licence line's keys, revoked ones included, oldest first. */
  async list(scope: LicenceScope, licenceId: string): Promise<DeviceKeyView[]> {
    const record = await this.deps.licences.record(scope, licenceId);
    return deviceKeysOf(record).map((k) => viewOf(record.licenceId, k));
  }

  /** Makes a key for the licence's device; refused on a revoked licence and past MAX_ACTIVE_DEVICE_KEYS. */
  async create(scope: LicenceScope, licenceId: string, request: DeviceKeyRequest): Promise<CreatedDeviceKey> {
    const { errors } = this.deps;
    await this.deps.licences.record(scope, licenceId);
    const label = (request.label ?? '').trim();
    if (label.length > MAX_DEVICE_KEY_LABEL || /[\u0000-\u001f\u007f]/.test(label)) {
      throw errors.explain('FieldsValidation', `label: at most ${MAX_DEVICE_KEY_LABEL} characters, no control characters`);
    }
    const { publicKey, signingKey } = await signingKeyOf(request, errors);
    const key = generateDeviceKey();
    const keySha256 = deviceKeySha256(key);
    const now = this.deps.now().toISOString();
    const made: DeviceKeyRecord = { keyId: keySha256.slice(0, 12), keySha256, role: request.role, label, created: now, revoked: null };
    if (publicKey) made.signingPublicKey = publicKey;
    const outcome = await this.store.licences.update<ApiError>(licenceId, (current) => {
      if (current.status === 'revoked') {
        return { refuse: errors.explain('LicenceRevoked', `licence ${current.licenceId} is revoked: its device serves no more, so it takes no new key`) };
      }
      const keys = deviceKeysOf(current);
      const active = keys.filter((k) => k.revoked === null).length;
      if (active >= MAX_ACTIVE_DEVICE_KEYS) {
        return { refuse: errors.explain('FieldsValidation', `licence ${current.licenceId} holds ${active} active device keys, ` +
          `the most a licence line may hold (${MAX_ACTIVE_DEVICE_KEYS}); revoke one first`) };
      }
      // 12 hex digits of a fresh 192-bit key's hash: a clash is a 1 in 2^48 event, refused rather than listed twice.
      if (keys.some((k) => k.keyId === made.keyId)) return { refuse: errors.explain('Internal', 'a key id clashed; try again') };
      return { accept: { ...current, deviceKeys: [...keys, made], updated: now } };
    });
    this.written(licenceId, outcome);
    const created: CreatedDeviceKey = { ...viewOf(licenceId, made), key };
    if (signingKey) created.signingKey = signingKey;
    return created;
  }

  /** Revokes one key of the licence line (again: nothing changes); it stays listed, and leaves the next document. */
  async revoke(scope: LicenceScope, licenceId: string, keyId: string): Promise<DeviceKeyView> {
    const { errors } = this.deps;
    await this.deps.licences.record(scope, licenceId);
    const now = this.deps.now().toISOString();
    const notFound = () => errors.explain('NotFoundRoute', `licence ${licenceId} has no device key ${keyId}`);
    const outcome = await this.store.licences.update<ApiError>(licenceId, (current) => {
      const keys = deviceKeysOf(current);
      const target = keys.find((k) => k.keyId === keyId);
      if (!target) return { refuse: notFound() };
      if (target.revoked !== null) return { accept: current };
      return { accept: { ...current, deviceKeys: keptKeys(keys.map((k) => (k === target ? { ...k, revoked: now } : k))), updated: now } };
    });
    const record = this.written(licenceId, outcome);
    const after = deviceKeysOf(record).find((k) => k.keyId === keyId);
    return viewOf(licenceId, after ?? { keyId, keySha256: '', role: 'full', label: '', created: now, revoked: now });
  }

  private written(licenceId: string, outcome: ChangeOutcome<ApiError>): LicenceRecord {
    if (outcome.outcome === 'missing') throw this.deps.errors.explain('LicenceNotFound', `no licence ${licenceId} in this account`);
    if (outcome.outcome === 'refused') throw outcome.reason;
    return outcome.record;
  }
}

/** What the device is told of a licence's keys: the active ones, as hashes (licence-document.ts says why that is safe). */
export function documentKeysOf(record: LicenceRecord): DocumentDeviceKey[] {
  return deviceKeysOf(record).filter((k) => k.revoked === null).map((k) => {
    const entry: DocumentDeviceKey = { keyId: k.keyId, keySha256: k.keySha256, role: k.role };
    if (k.signingPublicKey) entry.signingPublicKey = k.signingPublicKey;
    return entry;
  });
}

/** Every active key, and the most recently revoked ones up to MAX_LISTED_REVOKED_DEVICE_KEYS, in their order. */
function keptKeys(keys: DeviceKeyRecord[]): DeviceKeyRecord[] {
  const revoked = keys.filter((k) => k.revoked !== null).sort((a, b) => b.revoked!.localeCompare(a.revoked!));
  const dropped = new Set(revoked.slice(MAX_LISTED_REVOKED_DEVICE_KEYS));
  return keys.filter((k) => !dropped.has(k));
}

function viewOf(licenceId: string, k: DeviceKeyRecord): DeviceKeyView {
  return {
    keyId: k.keyId, licenceId, role: k.role, label: k.label, created: k.created, revoked: k.revoked, signing: Boolean(k.signingPublicKey),
  };
}
