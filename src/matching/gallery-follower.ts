// A node's galleries over the shared PostgreSQL store: built from the persons table at start, then kept in
// step with every node's writes by one change follower (the store's change log, LISTEN/NOTIFY and a poll).
// The follower is the only writer of these galleries, so what a search sees is always something the
// database committed; writers on this node wait for it (reach, catchUp) instead of writing the gallery
// themselves. Each account's index keeps int8 codes only and re-ranks its candidates with the templates
// read from the database (an asynchronous TemplateSource: one round trip per search).
import crypto from 'node:crypto';
import type { ChangeFollower, ChangeFollowerOptions } from '../storage/postgres/change-follower';
import type { PersonChange } from '../storage/postgres/change-log';
import type { AsyncChangeLog, AsyncPersonRepository } from '../storage/postgres/interfaces';
import { Galleries } from './galleries';
import { IndexGallery } from './index-gallery';

/** What the follower needs of the store (PostgresStore has it). */
export interface FollowedStore {
  readonly persons: AsyncPersonRepository;
  readonly changes: AsyncChangeLog;
  followChanges(options: Omit<ChangeFollowerOptions, 'settings'>): ChangeFollower;
}

export interface GalleryFollowerOptions {
  /** Only templates of this model can be compared; others are counted stale. */
  modelId: string;
  /** Longest wait for the follower to reach a position before the request is answered 503. */
  waitTimeoutMs: number;
  /** Errors the follower handled itself (lost connection, a batch to retry), for the log. */
  onError?: (err: unknown) => void;
  pollIntervalMs?: number;
}

export class GalleryFollower {
  readonly galleries: Galleries;
  private follower: ChangeFollower | undefined;
  private readonly name = crypto.randomUUID();

  constructor(private readonly store: FollowedStore, private readonly options: GalleryFollowerOptions) {
    const persons = store.persons;
    this.galleries = new Galleries((accountId) =>
      new IndexGallery(`${this.name}/${accountId}`, (ids) => persons.templatesOf(accountId, ids)));
  }

  /** The change position before the build, the build, then following from that position. */
  async start(): Promise<{ loaded: number; stale: number }> {
    const after = await this.store.changes.lastChange();
    const counts = await this.rebuild();
    this.follower = this.store.followChanges({
      after,
      onChanges: (batch) => this.apply(batch),
      onResync: async () => {
        const seq = await this.store.changes.lastChange();
        await this.rebuild();
        return seq;
      },
      onError: this.options.onError,
      pollIntervalMs: this.options.pollIntervalMs,
    });
    await this.follower.start();
    return counts;
  }

  /** Resolves once every change up to `seq` is in the galleries; DatabaseUnavailableError past the bound. */
  reach(seq: number): Promise<void> {
    if (!this.follower) return Promise.reject(new Error('gallery follower not started'));
    return this.follower.waitFor(seq, this.options.waitTimeoutMs);
  }

  /** Resolves once every change committed so far (this node's last write included) is in the galleries. */
  async catchUp(): Promise<void> {
    await this.reach(await this.store.changes.lastChange());
  }

  /** The last change applied. */
  get position(): number {
    return this.follower?.position ?? 0;
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
    this.galleries.close();
  }

  /**
   * Applies a batch by reading what the table holds now (idempotent, as the follower requires: a batch may
   * come twice). A person whose current template is of another model leaves the gallery.
   */
  private async apply(batch: readonly PersonChange[]): Promise<void> {
    const latest = new Map<string, Map<string, PersonChange>>();
    for (const change of batch) {
      let byPerson = latest.get(change.accountId);
      if (!byPerson) latest.set(change.accountId, (byPerson = new Map()));
      byPerson.set(change.personId, change);
    }
    for (const [accountId, byPerson] of latest) {
      const ids = [...byPerson.keys()];
      const templates = await this.store.persons.templatesOf(accountId, ids);
      const gallery = this.galleries.of(accountId);
      for (let i = 0; i < ids.length; i++) {
        const template = templates[i];
        const current = template && byPerson.get(ids[i])!.op !== 'remove' && byPerson.get(ids[i])!.modelId === this.options.modelId;
        if (current) await gallery.upsert(ids[i], template);
        else await gallery.remove(ids[i]);
      }
    }
  }

  /** Empties the galleries and loads every template of the model from the persons table, block by block. */
  private async rebuild(): Promise<{ loaded: number; stale: number }> {
    this.galleries.close();
    const cleared = new Set<string>();
    let loaded = 0;
    for await (const block of this.store.persons.templateBlocks(this.options.modelId)) {
      const gallery = this.galleries.of(block.accountId);
      // A copy aligned for Float32Array: the block's bytes may be a view of a larger buffer at any offset.
      const data = new Float32Array(Uint8Array.from(block.bytes).buffer);
      if (gallery instanceof IndexGallery) {
        await gallery.load(block.ids, data, block.dimension, { clear: !cleared.has(block.accountId) });
      } else {
        for (let i = 0; i < block.ids.length; i++) {
          await gallery.upsert(block.ids[i], data.slice(i * block.dimension, (i + 1) * block.dimension));
        }
      }
      cleared.add(block.accountId);
      loaded += block.ids.length;
    }
    return { loaded, stale: (await this.store.persons.count()) - loaded };
  }
}
