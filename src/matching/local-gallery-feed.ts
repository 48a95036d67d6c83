// The gallery feed of an in-process store (LMDB): as PostgreSQL's follower does with its change log
// (./gallery-follower.ts), this feed applies the store's committed changes to the galleries, so the services
// only write the store, whichever backend serves. Here nothing runs in between: a writer asks the feed to
// catch up after its commit, and a section asks it before its duplicate search, so the galleries hold every
// change committed before the answer. One application at a time, in log order.
import type { LocalPersonRepository } from '../storage/interfaces';
import type { Galleries } from './galleries';
import { replay } from './snapshot/restore';

export class LocalGalleryFeed {
  private applied: number;
  private applying: Promise<void> = Promise.resolve();

  /** `galleries` hold the store as of now (restored or built): the feed applies what is committed later. */
  constructor(private readonly galleries: Galleries, private readonly persons: LocalPersonRepository, private readonly modelId: string) {
    this.applied = persons.changes.lastChange();
  }

  /** Resolves once the galleries hold every change up to `seq`. */
  reach(seq: number): Promise<void> {
    return seq <= this.applied ? Promise.resolve() : this.catchUp();
  }

  /** Resolves once the galleries hold every change committed so far. */
  catchUp(): Promise<void> {
    const run = this.applying.catch(() => undefined).then(() => this.apply());
    this.applying = run;
    return run;
  }

  /** Each changed person's current template of the model goes in, anything else out, as a restore replays them. */
  private async apply(): Promise<void> {
    const last = this.persons.changes.lastChange();
    if (last <= this.applied) return;
    const changed = new Map<string, Set<string>>();
    for (const c of this.persons.changes.changesSince(this.applied)) {
      if (c.seq > last) break;
      let ids = changed.get(c.accountId);
      if (!ids) changed.set(c.accountId, (ids = new Set()));
      ids.add(c.personId);
    }
    for (const [accountId, ids] of changed) {
      await replay(this.galleries.of(accountId), this.persons, this.modelId, accountId, [...ids]);
    }
    this.applied = last;
  }
}
