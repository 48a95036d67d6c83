// The persons' metadata a node's meter cache holds (./meter-caches.ts), in typed arrays instead of an object
// per person: a cached person is then its key in the cache's Map and a slot number here (18 bytes of
// arrays), not a key, an object and two heap numbers. At the cache's bound of a million persons this is
// markedly less heap (docs/benchmarks.md). Slots freed by the cache are reused.

/** What a slot holds: milliseconds since the epoch, and the model's index in `models`. */
export interface SlotMeta {
  created: number;
  updated: number;
  modelId: string;
}

const FIRST_CAPACITY = 1024;
/** Model ids told apart at most (a deployment has one or two at a time); past it a person is not cached. */
const MAX_MODELS = 65_535;

export class MetaSlots {
  private created = new Float64Array(FIRST_CAPACITY);
  private updated = new Float64Array(FIRST_CAPACITY);
  private model = new Uint16Array(FIRST_CAPACITY);
  private free: number[] = [];
  private used = 0;
  private readonly models: string[] = [];
  private readonly modelIndex = new Map<string, number>();

  /** Slots in use. */
  get size(): number {
    return this.used - this.free.length;
  }

  /** A slot holding the meta, or -1 when its model id cannot be told apart (then nothing is kept). */
  take(modelId: string, created: number, updated: number): number {
    let m = this.modelIndex.get(modelId);
    if (m === undefined) {
      if (this.models.length >= MAX_MODELS) return -1;
      m = this.models.push(modelId) - 1;
      this.modelIndex.set(modelId, m);
    }
    const slot = this.free.pop() ?? this.grow();
    this.created[slot] = created;
    this.updated[slot] = updated;
    this.model[slot] = m;
    return slot;
  }

  read(slot: number): SlotMeta {
    return { created: this.created[slot], updated: this.updated[slot], modelId: this.models[this.model[slot]] };
  }

  release(slot: number): void {
    if (slot >= 0) this.free.push(slot);
  }

  /** Every slot free again (the cache was emptied); the arrays keep their size for the next fill. */
  releaseAll(): void {
    this.free = [];
    this.used = 0;
  }

  private grow(): number {
    if (this.used === this.created.length) {
      const capacity = 2 * this.created.length;
      const created = new Float64Array(capacity);
      created.set(this.created);
      const updated = new Float64Array(capacity);
      updated.set(this.updated);
      const model = new Uint16Array(capacity);
      model.set(this.model);
      this.created = created;
      this.updated = updated;
      this.model = model;
    }
    return this.used++;
  }
}
