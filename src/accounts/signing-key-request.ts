// A key's signing part, as the operator asked for it: a public key they hold the private half of, a key
// pair made here (the private key shown once), or none. Shared by cloud API keys and device API keys.
import type { ErrorCatalog } from '../errors';
import { checkedPublicKey } from '../services/request-signing';
import { generateRsaKeyPair } from '../storage/records';

export interface SigningKeyRequest {
  signing?: boolean;
  publicKey?: string;
}

/** The public key the key signs with, and the private key made for it (when made here); FieldsValidation otherwise. */
export async function signingKeyOf(request: SigningKeyRequest, errors: ErrorCatalog): Promise<{ publicKey?: string; signingKey?: string }> {
  if (request.signing && request.publicKey !== undefined) throw errors.explain('FieldsValidation', 'give signing: true or a publicKey, not both');
  if (request.publicKey !== undefined) {
    try {
      return { publicKey: checkedPublicKey(request.publicKey) };
    } catch (err) {
      throw errors.explain('FieldsValidation', `publicKey: ${(err as Error).message}`);
    }
  }
  if (!request.signing) return {};
  const { publicKey, privateKey } = await generateRsaKeyPair();
  return { publicKey, signingKey: privateKey };
}
