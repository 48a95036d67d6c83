// A node's galleries over the shared PostgreSQL store: built from the persons table at start, then kept in
// step with every node's writes by one change follower (the store's change log, LISTEN/NOTIFY and a poll).
// The follower is the only writer of these galleries, so what a search sees is always something the
// database committed; writers on this node wait for it (reach, catchUp) instead of writing the gallery
// themselves. The galleries are a cache of the database that answers on its own: each account's index
// keeps its int8 codes and re-ranks exactly from the node's gallery cache (`templates`), or without one from
// a float32 copy of every template it keeps, so a search never reads the database (identify keeps answering
// while it is unreachable).
import crypto from 'node:crypto';
import type {
  AsyncChangeLog, AsyncPersonRepository, BulkTemplateReader, ChangeFeed, ChangeFeedOptions, FollowedChange, FollowerStatus, OwnChanges,
} from '../storage/interfaces';
import { Galleries } from './galleries';
import { IndexGallery, type TemplateSource } from './index-gallery';

/** What the follower needs of the store (PostgresStore has it; the bulk reader makes it faster). */
export interface FollowedStore {
  readonly persons: AsyncPersonRepository & Partial<BulkTemplateReader>;
  readonly changes: AsyncChangeLog;
  followChanges(options: ChangeFeedOptions): ChangeFeed;
}

export interface GalleryFollowerOptions {
  /** Only templates of this model can be compared; others are counted stale. */
  modelId: string;
  /** Longest wait for the follower to reach a position before the request is answered 503. */
  waitTimeoutMs: number;
  /** Errors the follower handled itself (lost connection, a batch to retry), for the log. */
  onError?: (err: unknown) => void;
  pollIntervalMs?: number;
  /** Connections reading the persons table at once during a build; default DEFAULT_COPY_PARTS (one). */
  buildParts?: number;
  /** Where the indexes re-rank from (the node's gallery cache): they keep int8 codes only; else float32 copies. */
  templates?: (accountId: string) => TemplateSource;
  /**
   * The start's build from elsewhere than the store (the node's index snapshots): fills the galleries it is
   * given and resolves with the persons loaded, or undefined to build from the store as usual. Only the
   * start's build asks; a resync copies the store.
   */
  restore?: (galleries: Galleries) => Promise<number | undefined>;
}

export class GalleryFollower {
  /** The node's galleries; a resync rebuilds into new ones and moves them in here, so this object stays. */
  readonly galleries = new Galleries((accountId) => this.newGallery(accountId));
  private follower: ChangeFeed | undefined;
  private readonly name = crypto.randomUUID();

  constructor(private readonly store: FollowedStore, private readonly options: GalleryFollowerOptions) {}

  /** The change position before the build, the build, then following from that position. */
  async start(): Promise<{ loaded: number; stale: number }> {
    const after = await this.store.changes.lastChange();
    const counts = await this.rebuild(this.options.restore);
    this.follower = this.store.followChanges({
      after,
      withTemplates: typeof this.store.persons.openTemplate === 'function',
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

  /** A section on this node committed these changes: applied at once if nothing else came between (ChangeFeed.offer). */
  offer(own: OwnChanges): void {
    this.follower?.offer(own);
  }

  /** Resolves once every change committed so far (this node's last write included) is in the galleries. */
  async catchUp(): Promise<void> {
    await this.reach(await this.store.changes.lastChange());
  }

  /** The last change applied. */
  get position(): number {
    return this.follower?.position ?? 0;
  }

  /** Where the follower stands (position, the log's last seq seen, lag), for metrics; undefined before start. */
  status(): FollowerStatus | undefined {
    return this.follower?.status();
  }

  /** Stops following: the galleries stay as the last applied change left them (position) until stop(). */
  async halt(): Promise<void> {
    await this.follower?.stop();
  }

  async stop(): Promise<void> {
    await this.halt();
    this.galleries.close();
  }

  /**
   * Applies a batch with what the table holds now (idempotent, as the follower requires: a batch may come
   * twice). A person whose current template is of another model leaves the gallery.
   */
  private async apply(batch: readonly FollowedChange[]): Promise<void> {
    const latest = new Map<string, Map<string, FollowedChange>>();
    for (const change of batch) {
      let byPerson = latest.get(change.accountId);
      if (!byPerson) latest.set(change.accountId, (byPerson = new Map()));
      byPerson.set(change.personId, change);
    }
    for (const [accountId, byPerson] of latest) {
      const ids = [...byPerson.keys()];
      const templates = await this.currentTemplates(accountId, ids.map((id) => byPerson.get(id)!));
      const gallery = this.galleries.of(accountId);
      for (let i = 0; i < ids.length; i++) {
        const template = templates[i];
        if (template) await gallery.upsert(ids[i], template);
        else await gallery.remove(ids[i]);
      }
    }
  }

  /** The changed persons' current templates of the model (undefined: gone or of another model). */
  private async currentTemplates(accountId: string, changes: readonly FollowedChange[]): Promise<Array<Float32Array | undefined>> {
    const { modelId } = this.options;
    const open = this.store.persons.openTemplate?.bind(this.store.persons);
    if (open && changes.every((c) => c.current !== undefined)) {
      // Read with the log in the follower's one query: nothing more to fetch.
      return changes.map((c) => (c.current && c.current.modelId === modelId
        ? open(accountId, c.personId, modelId, c.current.sealedTemplate) : undefined));
    }
    const templates = await this.store.persons.templatesOf(accountId, changes.map((c) => c.personId));
    return changes.map((c, i) => (c.op !== 'remove' && c.modelId === modelId ? templates[i] : undefined));
  }

  private newGallery(accountId: string): IndexGallery {
    return new IndexGallery(`${this.name}/${crypto.randomUUID()}/${accountId}`, this.options.templates?.(accountId));
  }

  /**
   * Loads every template of the model into new galleries, then moves them into this.galleries: during a
   * resync searches keep answering from the old ones instead of empty ones.
   */
  private async rebuild(restore?: GalleryFollowerOptions['restore']): Promise<{ loaded: number; stale: number }> {
    const fresh = new Galleries((accountId) => this.newGallery(accountId));
    try {
      const loaded = (restore && await restore(fresh))
        ?? (this.store.persons.copyTemplates ? await this.copyInto(fresh) : await this.blocksInto(fresh));
      const { persons } = this.store;
      const stale = persons.countOtherModels ? await persons.countOtherModels(this.options.modelId) : (await persons.count()) - loaded;
      this.galleries.adopt(fresh);
      return { loaded, stale };
    } catch (err) {
      fresh.close();
      throw err;
    }
  }

  /**
   * The COPY stream (or streams, with buildParts), parsed on this thread, hands over blocks of one account's
   * templates; each goes to the index (its native load runs off the main thread) while the next rows arrive.
   * Where the addon opens them, they come sealed and are deciphered straight into the index's rows
   * (loadSealed); otherwise unsealed, their memory reused once the index has copied it. One load at a time.
   */
  private async copyInto(galleries: Galleries): Promise<number> {
    let loading: Promise<unknown> = Promise.resolve();
    let failure: unknown;
    let loaded: number;
    try {
      loaded = await this.store.persons.copyTemplates!(this.options.modelId, (rows) => {
        const gallery = galleries.of(rows.accountId) as IndexGallery;
        loading = loading.then(() => gallery.load(rows.ids, rows.data, rows.dimension))
          .then(() => rows.release(), (err: unknown) => { failure ??= err; });
      }, {
        parts: this.options.buildParts,
        openSealed: (block) => {
          const gallery = galleries.of(block.accountId) as IndexGallery;
          const load = loading.then(() => gallery.loadSealed({ ...block, keys: block.ids }, block.dimension, block.key));
          loading = load.catch(() => undefined);  // the copy fails with it (the consumer's rejection)
          return load;
        },
      });
    } catch (err) {
      await loading;  // loads still running settle before the caller closes these galleries
      throw err;
    }
    await loading;
    if (failure) throw failure;
    return loaded;
  }

  /** The generic path (a store without copyTemplates): the repository's template blocks, one after another. */
  private async blocksInto(galleries: Galleries): Promise<number> {
    let loaded = 0;
    for await (const block of this.store.persons.templateBlocks(this.options.modelId)) {
      // A copy aligned for Float32Array: the block's bytes may be a view of a larger buffer at any offset.
      const data = new Float32Array(Uint8Array.from(block.bytes).buffer);
      await (galleries.of(block.accountId) as IndexGallery).load(block.ids, data, block.dimension);
      loaded += block.ids.length;
    }
    return loaded;
  }
}
