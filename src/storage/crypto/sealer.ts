// Seals and opens the values of one store under its data key. A value's place — database name and LMDB key —
// is its additional authenticated data, so a sealed value only opens where it was written.
import type crypto from 'node:crypto';
import type { Key } from 'lmdb';

import { openBytes, sealBytes } from './aead';

export interface Sealer {
  seal(db: string, key: Key, plain: Uint8Array): Buffer;
  /** The plain bytes (a fresh buffer), or a SealError. */
  open(db: string, key: Key, sealed: Uint8Array): Buffer;
}

/** The AAD of a place: JSON of [db, ...key] (keys are strings, numbers and arrays of them: unambiguous). */
export function placeOf(db: string, key: Key): Buffer {
  return Buffer.from(JSON.stringify([db, ...(Array.isArray(key) ? key : [key])]), 'utf8');
}

/**
 * placeOf(db, [accountId, personId, modelId]) as the text around the person's id, `${prefix}${JSON of the
 * id}${suffix}`: for building many persons' places of one account at once.
 */
export function personPlaceParts(db: string, accountId: string, modelId: string): { prefix: string; suffix: string } {
  return { prefix: `[${JSON.stringify(db)},${JSON.stringify(accountId)},`, suffix: `,${JSON.stringify(modelId)}]` };
}

export class DataKeySealer implements Sealer {
  constructor(private readonly key: crypto.KeyObject) {}

  seal(db: string, key: Key, plain: Uint8Array): Buffer {
    return sealBytes(this.key, plain, placeOf(db, key));
  }

  open(db: string, key: Key, sealed: Uint8Array): Buffer {
    return openBytes(this.key, sealed, placeOf(db, key), `storage ${db} ${JSON.stringify(key)}`);
  }
}

/** Values as they are: only for reading and rewriting a schema-1 store before it is sealed. */
export const plainValues: Sealer = {
  seal: (_db, _key, plain) => Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength),
  open: (_db, _key, sealed) => Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength),
};
