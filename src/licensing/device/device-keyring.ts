// The device API keys a licensed device accepts from its ruling licence document, looked up by the SHA-256 of
// the Api-Key a client sends (licence-document.ts: DocumentDeviceKey). Built once per document, so a request
// costs one hash and one map lookup; a new document (the next check) brings the new set at once.
import type { DocumentDeviceKey, LicenceDocument } from '../licence-document';

const keyrings = new WeakMap<LicenceDocument, Map<string, DocumentDeviceKey>>();

export function keyringOf(document: LicenceDocument): Map<string, DocumentDeviceKey> {
  let keyring = keyrings.get(document);
  if (!keyring) {
    keyring = new Map((document.deviceKeys ?? []).map((k) => [k.keySha256, k]));
    keyrings.set(document, keyring);
  }
  return keyring;
}

/** The device keys' ids, for the log ("2 device API keys: 3f2a…, 9b1c…"). */
export function deviceKeysText(document: LicenceDocument): string {
  const keys = document.deviceKeys ?? [];
  const ids = keys.map((k) => `${k.keyId} (${k.role})`).join(', ');
  return `${keys.length} device API key${keys.length === 1 ? '' : 's'} from the licence line${ids ? `: ${ids}` : ''}`;
}

/** A log line when the set of device keys changed between two documents, else undefined. */
export function deviceKeysChange(before: LicenceDocument | undefined, after: LicenceDocument): string | undefined {
  const ids = (d: LicenceDocument | undefined) => (d?.deviceKeys ?? []).map((k) => `${k.keyId}/${k.role}/${k.signingPublicKey ? 's' : ''}`).sort().join(',');
  if (before !== undefined && ids(before) === ids(after)) return undefined;
  if (before === undefined && (after.deviceKeys ?? []).length === 0) return undefined;
  return `licence ${after.licenceId}: ${deviceKeysText(after)}`;
}
