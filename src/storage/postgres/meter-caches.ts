// What a metered request reads besides its count, cached on a node whose change follower listens: the
// account's plan (which picks its limit) and the matched person's meta (the answer's created/updated).
// With both known and a limit of 0 (unlimited: nothing to count), identify and verify answer from the
// node alone, as the search already does: no database round trip. A limited account's request always
// makes its statement, since its count must be exact across nodes.
//
// Plans: every write to the accounts table, by any node or by hand, notifies ACCOUNT_CHANNEL
// (./accounts.ts, schema 3's trigger); this node also drops its entry when it writes one itself. Persons:
// the follower's delivered changes carry each person's current meta. So another node's write reaches this
// cache when the follower has it (the bound documented for the galleries), and this node's own writes at once.
//
// Persons that were in the database before the follower listened are known once read: each time the
// follower starts listening (at start, after a lost connection, after a resync) the cache is filled from
// the table in pages in the background (`source`), keeping no row whose person a delivered change wrote
// while the fill ran (FollowedCache.beginFill). Until the fill is done a request reads as before.
import type { Plan } from '../../domain/accounts';
import type { PersonMeta } from '../records';
import type { FollowedChange } from '../interfaces';
import { FollowedCache } from './followed-cache';
import { MetaSlots } from './meta-slots';
import type { PersonMetaPosition, PersonMetaRow } from './persons';

/** Plans cached at most (a few bytes each). */
const MAX_PLANS = 100_000;
/** Persons' meta cached at most (~110 B of heap each, ./meta-slots.ts): past it, the oldest is read again when next matched. */
const MAX_PERSONS = 1_000_000;
/** Persons read per statement of a fill: a page's rows are one short turn of the event loop (docs/benchmarks.md). */
const FILL_PAGE = 1_000;
/**
 * A fill begins this long after the follower listens: a node's start (or its return after an outage) serves
 * its first requests first, which read the database meanwhile as without a fill (a large fill takes a core
 * for a while; begun at once, it delayed a joining node's first identify: docs/benchmarks.md).
 */
const FILL_DELAY_MS = 1_000;

/** Where a fill reads the persons' meta (PgPersonRepository.metaPage). */
export interface PersonMetaSource {
  metaPage(after: PersonMetaPosition | undefined, limit: number): Promise<PersonMetaRow[]>;
}

export interface MeterCachesOptions {
  /** Fills the persons' cache each time the follower listens; without it, persons are cached as they are read. */
  source?: PersonMetaSource;
  maxPersons?: number;
  /** Defaults FILL_DELAY_MS and FILL_PAGE. */
  fillDelayMs?: number;
  fillPageRows?: number;
}

/** What the fills did, for tests and metrics. */
export interface FillStats {
  /** Fills that read the whole table (or until the cache was full). */
  completed: number;
  /** Fills stopped by a reset (the connection lost or made again) or by an error. */
  stopped: number;
  /** Persons kept by the last fill. */
  lastKept: number;
}

export type KnownPerson = PersonMeta & { modelId: string };

const personKey = (accountId: string, personId: string) => `${accountId}\0${personId}`;

export class MeterCaches {
  /** null: the account has no record (its limit is [quota]'s). */
  readonly plans = new FollowedCache<Plan | null>(MAX_PLANS);
  /** Each person's slot in `slots`. */
  private readonly persons: FollowedCache<number>;
  private readonly slots = new MetaSlots();
  readonly fillStats: FillStats = { completed: 0, stopped: 0, lastKept: 0 };
  private filling: Promise<void> | undefined;
  /** Bumped by every reset of the persons: a fill still waiting for its delay then does not begin. */
  private fillEpoch = 0;

  constructor(private readonly options: MeterCachesOptions = {}) {
    this.persons = new FollowedCache<number>(options.maxPersons ?? MAX_PERSONS, this.slots);
  }

  /** The follower's connection: listening on both channels (true: trusted from now on, empty), or lost. */
  listening(on: boolean): void {
    this.plans.reset(on);
    this.resetPersons(on);
  }

  /** The follower rebuilt from the table: changes were missed, so no person's meta is known. */
  resynced(on: boolean): void {
    this.resetPersons(on);
  }

  private resetPersons(on: boolean): void {
    this.persons.reset(on);
    this.fillEpoch++;
    if (on) this.fill();
  }

  /** Resolves once no fill runs (tests, and a bench that waits for the cache before measuring). */
  async filled(): Promise<void> {
    while (this.filling) await this.filling;
  }

  /** An account was written (by a notification, or by this node after its commit); '*' for every account. */
  accountChanged(accountId: string): void {
    if (accountId === '*') this.plans.reset(this.plans.isTrusted);
    else this.plans.delete(accountId);
  }

  /** The follower applied `batch`: each person as the table holds it now. */
  delivered(batch: readonly FollowedChange[]): void {
    for (const c of batch) {
      const key = personKey(c.accountId, c.personId);
      const slot = c.current ? this.slots.take(c.current.modelId, c.current.created.getTime(), c.current.updated.getTime()) : -1;
      if (slot >= 0) this.persons.set(key, slot);
      else this.persons.delete(key);
    }
  }

  person(accountId: string, personId: string): KnownPerson | undefined {
    const slot = this.persons.get(personKey(accountId, personId));
    if (slot === undefined) return undefined;
    const m = this.slots.read(slot);
    return { personId, created: new Date(m.created).toISOString(), updated: new Date(m.updated).toISOString(), modelId: m.modelId };
  }

  /** Persons whose meta is cached (for tests and metrics). */
  get personsCached(): number {
    return this.persons.size;
  }

  personToken(): number {
    return this.persons.token();
  }

  /** Keeps a person's meta read by a request begun at `token` (FollowedCache.fill). */
  fillPerson(accountId: string, personId: string, person: { modelId: string; created: Date; updated: Date }, token: number): void {
    const slot = this.slots.take(person.modelId, person.created.getTime(), person.updated.getTime());
    if (slot >= 0) this.persons.fill(personKey(accountId, personId), slot, token);
  }

  /**
   * Starts a fill from the table after the delay; one already running stops at its next page (the reset
   * made it stale), one still waiting for its delay is cancelled by the next reset.
   */
  private fill(): void {
    const source = this.options.source;
    if (!source) return;
    const epoch = ++this.fillEpoch;
    const delayMs = this.options.fillDelayMs ?? FILL_DELAY_MS;
    const run = new Promise<void>((resolve) => setTimeout(resolve, delayMs).unref())
      .then(() => (epoch === this.fillEpoch ? this.fillFrom(source) : undefined))
      .finally(() => {
        if (this.filling === run) this.filling = undefined;
      });
    this.filling = run;
  }

  private async fillFrom(source: PersonMetaSource): Promise<void> {
    const fill = this.persons.beginFill();
    const pageRows = this.options.fillPageRows ?? FILL_PAGE;
    let failed = false;
    try {
      let after: PersonMetaPosition | undefined;
      while (!fill.stale) {
        const rows = await source.metaPage(after, pageRows);
        for (const r of rows) {
          const slot = this.slots.take(r.model_id, r.created_ms, r.updated_ms);
          if (slot >= 0 && !fill.put(personKey(r.account_id, r.person_id), slot)) return;  // stale, or the cache is full
        }
        if (rows.length < pageRows) return;
        after = rows[rows.length - 1];
      }
    } catch {
      // Not retried until the follower listens anew: requests read the database meanwhile, as without a fill.
      failed = true;
    } finally {
      if (failed || fill.stale) this.fillStats.stopped++;
      else this.fillStats.completed++;
      this.fillStats.lastKept = fill.kept;
      fill.end();
    }
  }
}
