// One sealed float32 template per person (`template-rows`, key [accountId, personId]), beside the segments:
// the similarity index keeps only int8 codes and re-ranks its best candidates with these exact templates,
// read one by one (a segment is 32 times a sealed 2.8 KB row to open). The segments stay the
// fast path of a full gallery rebuild. Both are written in the transaction that writes the person.
import type { Database, RootDatabase } from 'lmdb';

import type { Sealer } from '../crypto/sealer';


/** A person's place in the store: [accountId, personId]. */
export type PersonKey = [string, string];

export const TEMPLATE_ROWS_DB = 'template-rows';

export class TemplateRows {
  private readonly rows: Database<Buffer, PersonKey>;

  constructor(root: RootDatabase, private readonly sealer: Sealer) {
    this.rows = root.openDB<Buffer, PersonKey>({ name: TEMPLATE_ROWS_DB, encoding: 'binary' });
  }

  /** Writes the person's row; inside the caller's write transaction. */
  put(accountId: string, personId: string, template: Float32Array): void {
    const key: PersonKey = [accountId, personId];
    const bytes = new Uint8Array(template.buffer, template.byteOffset, template.byteLength);
    this.rows.put(key, this.sealer.seal(TEMPLATE_ROWS_DB, key, bytes));
  }

  /** The sealed value as it would be written (migrations seal before their transaction). */
  sealed(accountId: string, personId: string, bytes: Uint8Array): Buffer {
    return this.sealer.seal(TEMPLATE_ROWS_DB, [accountId, personId], bytes);
  }

  /** Writes a value sealed by `sealed`; inside the caller's write transaction. */
  putSealed(accountId: string, personId: string, sealed: Buffer): void {
    this.rows.put([accountId, personId], sealed);
  }

  remove(accountId: string, personId: string): void {
    this.rows.remove([accountId, personId]);
  }

  /** The templates of `personIds` in order (undefined where the account has no such person). Synchronous. */
  read(accountId: string, personIds: readonly string[]): Array<Float32Array | undefined> {
    const out = new Array<Float32Array | undefined>(personIds.length);
    for (let i = 0; i < personIds.length; i++) out[i] = this.one(accountId, personIds[i]);
    return out;
  }

  one(accountId: string, personId: string): Float32Array | undefined {
    const key: PersonKey = [accountId, personId];
    const fast = this.rows.getBinaryFast(key);
    if (!fast) return undefined;
    // getBinaryFast hands out lmdb-js's reused read buffer (its `length` is the value's size): opened at
    // once, before any other read can overwrite it.
    const plain = this.sealer.open(TEMPLATE_ROWS_DB, key, fast.subarray(0, fast.length));
    // A Float32Array needs 4-byte alignment; the opened buffer is fresh and normally starts at 0.
    if (plain.byteOffset % 4 === 0) return new Float32Array(plain.buffer, plain.byteOffset, plain.byteLength >> 2);
    return new Float32Array(Uint8Array.from(plain).buffer);
  }

  count(): number {
    return this.rows.getCount();
  }
}
