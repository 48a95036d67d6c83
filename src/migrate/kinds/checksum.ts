// Checksums that prove a moved store equal to its source: per scope (an account, or the whole store for what
// belongs to no account), the number of items and a SHA-256 over them in key order. Each side computes its
// own from what it reads through the storage interface, so the two backends' different layouts (JSON object
// key order in jsonb, timestamps with or without milliseconds) must not change the text hashed: items are
// hashed as canonical JSON with sorted keys and instants in one form.
import crypto from 'node:crypto';

export interface Checksum {
  count: number;
  sha256: string;
}

/** Scope -> checksum. STORE_SCOPE is the scope of items of no account. */
export type Checksums = Map<string, Checksum>;

export const STORE_SCOPE = '';

/** One item: its scope, a key unique within the scope (the hash's order) and the canonical text of its content. */
export interface ChecksumItem {
  scope: string;
  key: string;
  content: string;
}

/** JSON with object keys sorted and undefined members left out, so equal records give equal text. */
export function canonical(value: unknown): string {
  return JSON.stringify(sortedKeys(value));
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value) || value instanceof Uint8Array) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortedKeys(v);
  }
  return out;
}

/** An ISO 8601 instant in one form (with milliseconds, UTC); null and absent stay so. */
export function instant(iso: string | null | undefined): string | null | undefined {
  if (iso === null || iso === undefined) return iso;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : new Date(ms).toISOString();
}

export function checksumsOf(items: Iterable<ChecksumItem>): Checksums {
  const byScope = new Map<string, ChecksumItem[]>();
  for (const item of items) {
    let list = byScope.get(item.scope);
    if (!list) byScope.set(item.scope, (list = []));
    list.push(item);
  }
  const out: Checksums = new Map();
  for (const scope of [...byScope.keys()].sort()) {
    const list = byScope.get(scope)!.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const hash = crypto.createHash('sha256');
    // Length-prefixed: no two different lists of items hash the same text.
    for (const { key, content } of list) hash.update(`${key.length}:${key}${content.length}:${content}`);
    out.set(scope, { count: list.length, sha256: hash.digest('hex') });
  }
  return out;
}
