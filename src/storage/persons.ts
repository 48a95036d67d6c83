// Persons per account. Keys are [accountId, personId], so accounts never share a record. Metadata plus
// template live in `persons`; the reference image (kept for `face-check reindex`) in `images`, written in
// the same transaction.
import type { Database, RootDatabase } from 'lmdb';

export interface PersonMeta {
  personId: string;
  /** ISO 8601 with milliseconds and Z. */
  created: string;
  updated: string;
}

export interface PersonRecord extends PersonMeta {
  modelId: string;
  /** L2-normalised embedding. */
  template: Float32Array;
}

/** A person of one account, as stored. */
export interface AccountPerson extends PersonRecord {
  accountId: string;
}

interface StoredPerson extends PersonMeta {
  modelId: string;
  /** Float32 little-endian bytes. */
  template: Uint8Array;
}

type PersonKey = [string, string];

export type CreateResult = { created: true; person: PersonRecord } | { created: false };

export class PersonRepository {
  private readonly root: RootDatabase;
  private readonly meta: Database<StoredPerson, PersonKey>;
  private readonly images: Database<Buffer, PersonKey>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.meta = root.openDB<StoredPerson, PersonKey>({ name: 'persons' });
    this.images = root.openDB<Buffer, PersonKey>({ name: 'images', encoding: 'binary' });
  }

  get(accountId: string, personId: string): PersonRecord | undefined {
    const stored = this.meta.get([accountId, personId]);
    return stored && fromStored(stored);
  }

  referenceImage(accountId: string, personId: string): Buffer | undefined {
    return this.images.get([accountId, personId]);
  }

  /** Writes a new person unless the id exists (checked inside the write transaction). */
  async create(accountId: string, personId: string, input: TemplateInput, now: string): Promise<CreateResult> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      if (this.meta.get(key) !== undefined) return { created: false } as const;
      const person: PersonRecord = { personId, created: now, updated: now, modelId: input.modelId, template: input.template };
      this.meta.put(key, toStored(person));
      this.images.put(key, Buffer.from(input.referenceImage));
      return { created: true, person } as const;
    });
  }

  /** Replaces template and reference image of an existing person; undefined when it does not exist. */
  async replace(accountId: string, personId: string, input: TemplateInput, now: string): Promise<PersonRecord | undefined> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.meta.get(key);
      if (old === undefined) return undefined;
      const person: PersonRecord = {
        personId, created: old.created, updated: now, modelId: input.modelId, template: input.template,
      };
      this.meta.put(key, toStored(person));
      this.images.put(key, Buffer.from(input.referenceImage));
      return person;
    });
  }

  /** Replaces only the template (reindex): created/updated stay, the person's reference data is unchanged. */
  async setTemplate(accountId: string, personId: string, modelId: string, template: Float32Array): Promise<boolean> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.meta.get(key);
      if (old === undefined) return false;
      this.meta.put(key, { ...old, modelId, template: templateBytes(template) });
      return true;
    });
  }

  /** Deletes the person and its image; returns what was deleted, undefined when absent. */
  async remove(accountId: string, personId: string): Promise<PersonRecord | undefined> {
    const key: PersonKey = [accountId, personId];
    return this.root.transaction(() => {
      const old = this.meta.get(key);
      if (old === undefined) return undefined;
      this.meta.remove(key);
      this.images.remove(key);
      return fromStored(old);
    });
  }

  /** Every person of every account (the gallery rebuild at start and reindex read this). */
  *all(): Generator<AccountPerson> {
    for (const { key, value } of this.meta.getRange()) {
      yield { accountId: key[0], ...fromStored(value) };
    }
  }

  count(accountId?: string): number {
    if (accountId === undefined) return this.meta.getCount();
    return this.meta.getKeysCount({ start: [accountId, ''] as PersonKey, end: [`${accountId}\u0000`, ''] as PersonKey });
  }
}

export interface TemplateInput {
  modelId: string;
  template: Float32Array;
  /** The client's original image bytes. */
  referenceImage: Uint8Array;
}

function templateBytes(t: Float32Array): Uint8Array {
  return Buffer.from(t.buffer, t.byteOffset, t.byteLength);
}

function toStored(p: PersonRecord): StoredPerson {
  return { personId: p.personId, created: p.created, updated: p.updated, modelId: p.modelId, template: templateBytes(p.template) };
}

function fromStored(s: StoredPerson): PersonRecord {
  // Copy: decoded buffers may be unaligned views into a shared read buffer.
  const bytes = new Uint8Array(s.template.byteLength);
  bytes.set(s.template);
  return { personId: s.personId, created: s.created, updated: s.updated, modelId: s.modelId, template: new Float32Array(bytes.buffer) };
}
