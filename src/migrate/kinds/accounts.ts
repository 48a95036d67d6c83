// Operators' accounts (the password only as its scrypt hash), API keys by the SHA-256 they are stored under
// (the keys clients hold keep working, none is ever in clear) and the response-signing key pair (clients that
// pinned its public key keep verifying; its private key is opened with the source's data key and sealed again
// with the target's).
import type { AsyncStore } from '../../storage/interfaces';
import { canonical, checksumsOf, instant, type Checksums } from './checksum';
import { emptyCount, type CopyCount, type MovedKind } from './kind';

export const ACCOUNTS: MovedKind = {
  name: 'accounts',
  async copy(from, to) {
    const count = emptyCount();
    for (const account of await from.accounts.list()) {
      // Asked first: a store may report a taken e-mail before a taken id, and the account's own is both.
      if (await to.accounts.get(account.accountId)) {
        count.present++;
        continue;
      }
      const outcome = await to.accounts.create(account);
      if (outcome === 'created') count.copied++;
      else if (outcome === 'id-taken') count.present++;
      else count.failed.push({ item: account.accountId, reason: 'another account of the target has its e-mail address' });
    }
    return count;
  },
  async checksums(store): Promise<Checksums> {
    return checksumsOf((await store.accounts.list()).map((a) => ({
      scope: a.accountId, key: a.accountId,
      content: canonical({ ...a, created: instant(a.created), updated: instant(a.updated) }),
    })));
  },
};

export const API_KEYS: MovedKind = {
  name: 'API keys',
  async copy(from, to) {
    const count = emptyCount();
    for (const { keySha256, record } of await from.apiKeys.entries()) {
      if (await to.apiKeys.importEntry(keySha256, record)) count.copied++;
      else count.present++;
    }
    return count;
  },
  async checksums(store): Promise<Checksums> {
    return checksumsOf((await store.apiKeys.entries()).map(({ keySha256, record: k }) => ({
      scope: k.accountId, key: keySha256,
      content: canonical({ ...k, created: instant(k.created), revoked: instant(k.revoked), lastUsed: instant(k.lastUsed) }),
    })));
  },
};

/** 'copied', 'present' (the same key was there), 'differs' (the target made its own: clients pinned the source's), 'none'. */
export type SigningKeyOutcome = 'copied' | 'present' | 'differs' | 'none';

/**
 * Moves the response-signing key pair when the source serves clients (it has keys or accounts): asking a store
 * for the pair makes one, and a store that serves nobody has none worth keeping.
 */
export async function copyResponseSigningKey(from: AsyncStore, to: AsyncStore, written: CopyCount[]): Promise<SigningKeyOutcome> {
  if (await from.apiKeys.isEmpty() && (await from.accounts.list()).length === 0) return 'none';
  const pair = await from.serviceKeys.responseSigning();
  const stored = await to.serviceKeys.importResponseSigning(pair);
  if (stored.publicKey !== pair.publicKey) return 'differs';
  return stored.created === pair.created && written.some((c) => c.copied > 0) ? 'copied' : 'present';
}
