// Serialises the writes of one account. An enrolment's rule spans two places — "this id is free and this
// face is not enrolled yet" is read from the store and the gallery, then written to both — so two concurrent
// creates must not interleave between the check and the insert, or both pass. One process owns an LMDB
// store, so an in-process queue per account is exact; a shared database takes a lock in the database.
export class AccountLocks {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after every earlier `run` of the same account has settled; accounts do not wait on each other. */
  run<T>(accountId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(accountId) ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.then(() => undefined, () => undefined);
    this.tails.set(accountId, tail);
    // The map holds only accounts with work queued: the last one out removes its entry.
    void tail.then(() => { if (this.tails.get(accountId) === tail) this.tails.delete(accountId); });
    return result;
  }

  /** Accounts with work queued (for tests: the map does not grow with accounts ever seen). */
  get busy(): number {
    return this.tails.size;
  }
}
