// The client addresses an account signed in from (the latest few per account), so that the sign-in throttle's
// per-account back-off does not refuse the owner at an address they used before (src/licensing/sign-in-
// throttle.ts). Kept in the store, not in memory, so a restart forgets none. One record per account: its
// addresses with the last sign-in from each, latest first.
import type { Database, RootDatabase } from 'lmdb';

export interface KnownAddress {
  address: string;
  lastSeen: string;
}

export class KnownAddressRepository {
  private readonly root: RootDatabase;
  private readonly db: Database<KnownAddress[], string>;

  constructor(root: RootDatabase) {
    this.root = root;
    this.db = root.openDB<KnownAddress[], string>({ name: 'known-sign-in-addresses' });
  }

  isKnown(accountId: string, address: string): boolean {
    return (this.db.get(accountId) ?? []).some((a) => a.address === address);
  }

  /** Records a successful sign-in from `address` at `at`; past `keep` addresses the least recent go. */
  remember(accountId: string, address: string, at: Date, keep: number): Promise<void> {
    return this.root.transaction(() => {
      const others = (this.db.get(accountId) ?? []).filter((a) => a.address !== address);
      const kept = [{ address, lastSeen: at.toISOString() }, ...others].slice(0, Math.max(1, keep));
      this.db.put(accountId, kept);
    });
  }
}
