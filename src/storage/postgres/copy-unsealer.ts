// The start-up build's templates unsealed as each COPY part is parsed on the calling thread (the one
// BinaryCopyParser): its rows gathered per account into batches of up to 1,024 sealed values with their
// AADs, and each full batch opened while parsing goes on. Natively (the default where the addon can open
// AES-256-GCM) the addon opens a batch off the event loop on every core but this one: one set-up and open
// per template in JavaScript was a large share of a node's join, and here this thread only parses and copies
// bytes. Where the addon cannot, or with FACE_CHECK_TEMPLATE_UNSEAL=js, the same batches are opened in
// JavaScript on this thread (../crypto/sealed-batch.ts openSealedBatchHere). A consumer that can open sealed
// templates where it keeps them (the index's loadSealed) takes the batches sealed, natively only, so no
// unsealed copy of a batch is ever made; otherwise they are opened into blocks of floats and handed over. At
// most BATCHES_IN_FLIGHT batches of a copy are opened at once, so the addon's calls leave the thread pool
// room for the index's loads, and when more than BATCHES_QUEUED wait, the copy's streams stop reading until
// one is done: batch buffers are reused, never taken anew while loads are the slower side. Where fresh memory
// is dear (a page's first write is costly on some virtual machines) rows copied into a new buffer cost far
// more than into a reused one, and bounded batches of 1,024 rows with the reading paused build faster than
// unbounded batches of 4,096 (figures: docs/benchmarks.md). A template that does not open fails the copy with
// a SealError naming the first such row in the stream, in the same words whichever opener found it.
import type crypto from 'node:crypto';
import os from 'node:os';

import { chooseUnsealer, SealedLoader, Turns, type Unsealer } from '../../threads/sealed-loader';
import { SEAL_OVERHEAD, SealError, sealFaultMessage } from '../crypto/aead';
import { openSealedBatch, openSealedBatchHere, sealedBatchAvailable, type SealedBatchOutcome, type SealedRowFault } from '../crypto/sealed-batch';
import { personPlaceParts } from '../crypto/sealer';
import type { OpenedTemplates, SealedBlockConsumer } from '../interfaces';
import { BinaryCopyParser, type CopyPartSink } from './template-copy';

export interface UnsealSettings {
  key: crypto.KeyObject;
  /** The sealer's place name; the AAD is JSON of [place, account, person, model], as the sealer builds it. */
  place: string;
  modelId: string;
}

/** The SealError of a template that did not open, in the sealer's words (../crypto/aead.ts). */
function sealFailure(fault: SealedRowFault | '', settings: UnsealSettings, accountId: string, personId: string, bytes: number, version: number): SealError {
  if (fault === 'size' || fault === '') return new SealError(`storage: template of ${bytes} bytes is not float32`);
  const what = `storage ${settings.place} ${JSON.stringify([accountId, personId, settings.modelId])}`;
  return new SealError(sealFaultMessage(what, fault === 'short' ? { fault, bytes } : fault === 'version' ? { fault, version } : { fault }));
}

/** Rows per batch: a short call on a core, and little memory held by the batches of a copy. */
const BLOCK = 1024;
/** An account's first batch holds this many rows; an account of a few persons keeps little memory. */
const FIRST = 64;
const BATCHES_IN_FLIGHT = 2;
/** Full batches a copy holds (opening or waiting) before its streams stop reading until one is done. */
const BATCHES_QUEUED = BATCHES_IN_FLIGHT + 1;
/** Threads per batch: every core but the one this thread parses on (a batch on every core made the parsing wait its turn). */
const THREADS = Math.max(1, os.availableParallelism() - 1);

/** Who opens the start-up build's templates: the addon ('native') or JavaScript on this thread ('js'). */
export type TemplateUnsealer = Unsealer;

/** FACE_CHECK_TEMPLATE_UNSEAL=js chooses JavaScript; otherwise native where the addon can open AES-256-GCM. */
export function chooseTemplateUnsealer(requested?: TemplateUnsealer): TemplateUnsealer {
  return chooseUnsealer(requested, process.env.FACE_CHECK_TEMPLATE_UNSEAL, () => sealedBatchAvailable().available);
}

/** Rows of one account whose sealed values all have one length (one template dimension). */
interface Batch {
  accountId: string;
  sealedLength: number;
  /** The AAD's JSON around the person id: `["place","account",` and `,"model"]` (personPlaceParts). */
  place: { prefix: string; suffix: string };
  ids: string[];
  /** Each row's place in its part's stream: the first failing row in stream order names the failure. */
  seqs: number[];
  sealed: Buffer;
  aad: Buffer;
  aadUsed: number;
  aadOffsets: Uint32Array;
}

/** A batch's opener: the addon's on the other cores, or JavaScript's on this thread. */
type BatchOpener = (key: Uint8Array, batch: Parameters<typeof openSealedBatchHere>[1]) => Promise<SealedBatchOutcome>;

/**
 * The sinks of one copy's parts: they share the raw data key (wiped by close()), the opener and the batches
 * in flight. close() once the copy settled.
 */
export class CopyUnsealers {
  private readonly rawKey: Buffer;
  private readonly turns = new Turns(BATCHES_IN_FLIGHT);
  private readonly opener: BatchOpener;
  private readonly openSealed: SealedBlockConsumer | undefined;

  /** With `openSealed` (natively only), blocks go to it sealed and `onRows` is not called. */
  constructor(private readonly settings: UnsealSettings, unsealer: TemplateUnsealer, private readonly onRows: (rows: OpenedTemplates) => void,
    openSealed?: SealedBlockConsumer) {
    this.rawKey = settings.key.export();
    this.opener = unsealer === 'native' ? (key, batch) => openSealedBatch(key, batch, THREADS) : async (key, batch) => openSealedBatchHere(key, batch);
    this.openSealed = unsealer === 'native' ? openSealed : undefined;
  }

  sink(): CopyPartSink {
    return new UnsealSink(this.settings, this.rawKey, new SealedLoader(this.turns), this.opener, this.onRows, this.openSealed);
  }

  close(): void {
    // Batches that started copied the key; one still waiting belongs to a part that was aborted (a copy
    // settles only after every part's end()), and an aborted part opens nothing more.
    this.rawKey.fill(0);
  }
}

class UnsealSink implements CopyPartSink {
  private readonly parser = new BinaryCopyParser((fields) => this.row(fields));
  private readonly filling = new Map<string, Batch>();
  /** Accounts that filled a whole batch: their next one starts whole. */
  private readonly large = new Set<string>();
  private readonly spareOut: Float32Array[] = [];
  private readonly spareSealed: Buffer[] = [];
  private seq = 0;
  private rows = 0;
  private stopped = false;
  constructor(private readonly settings: UnsealSettings, private readonly rawKey: Buffer, private readonly loader: SealedLoader,
    private readonly opener: BatchOpener, private readonly onRows: (rows: OpenedTemplates) => void, private readonly openSealed?: SealedBlockConsumer) {}

  push(chunk: Buffer): boolean {
    // After a failure only rows before it can change which row is reported, and those were parsed already.
    if (this.stopped) return true;
    try {
      this.parser.push(chunk);
    } catch (err) {
      this.fail(this.seq, err as Error);
    }
    return this.loader.turns.queued <= BATCHES_QUEUED;
  }

  drained(): Promise<void> {
    return this.loader.turns.below(BATCHES_QUEUED);
  }

  async end(): Promise<{ rows: number; finished: boolean }> {
    for (const batch of [...this.filling.values()]) this.submit(batch);
    await this.loader.settle();
    return { rows: this.rows, finished: this.parser.finished };
  }

  abort(): void {
    this.loader.abort();
    this.stopped = true;
    this.filling.clear();
  }

  private fail(seq: number, error: Error): void {
    this.stopped = true;
    this.loader.fail(seq, error);
  }

  private row(fields: Array<Buffer | null>): void {
    if (fields.length !== 3) throw new Error(`COPY: a row of ${fields.length} fields, expected account, person and template`);
    const [account, person, sealed] = fields;
    if (account === null || person === null || sealed === null) throw new Error('COPY: a NULL field');
    const accountId = account.toString('utf8');
    const personId = person.toString('utf8');
    let b = this.filling.get(accountId);
    if (b && b.sealedLength !== sealed.length) {
      this.submit(b);  // another dimension: a load of its own, which the index refuses with a clear error
      b = undefined;
    }
    b ??= this.start(accountId, sealed.length);
    const i = b.ids.length;
    if ((i + 1) * b.sealedLength > b.sealed.length) b.sealed = this.grown(b.sealed, Math.min(BLOCK, 2 * i) * b.sealedLength, i * b.sealedLength);
    sealed.copy(b.sealed, i * b.sealedLength);
    // The AAD is the sealer's JSON of [place, account, person, model]; only the person differs in a batch.
    const middle = JSON.stringify(personId);
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const { prefix, suffix } = b.place;
    const most = 3 * (prefix.length + middle.length + suffix.length);
    if (b.aadUsed + most > b.aad.length) b.aad = this.grown(b.aad, Math.max(2 * b.aad.length, b.aadUsed + most), b.aadUsed);
    b.aadUsed += b.aad.write(prefix, b.aadUsed, 'utf8');
    b.aadUsed += b.aad.write(middle, b.aadUsed, 'utf8');
    b.aadUsed += b.aad.write(suffix, b.aadUsed, 'utf8');
    b.aadOffsets[i + 1] = b.aadUsed;
    b.ids.push(personId);
    b.seqs.push(this.seq++);
    if (b.ids.length >= BLOCK) {
      this.large.add(accountId);
      this.submit(b);
    }
  }

  private start(accountId: string, sealedLength: number): Batch {
    const rows = this.large.has(accountId) ? BLOCK : FIRST;
    const wanted = rows * Math.max(1, sealedLength);
    const at = this.spareSealed.findIndex((s) => s.length === wanted);
    const sealed = at >= 0 ? this.spareSealed.splice(at, 1)[0] : Buffer.allocUnsafeSlow(wanted);
    const b: Batch = {
      accountId, sealedLength, place: personPlaceParts(this.settings.place, accountId, this.settings.modelId), ids: [], seqs: [], sealed,
      aad: Buffer.allocUnsafeSlow(rows * 64), aadUsed: 0, aadOffsets: new Uint32Array(BLOCK + 1),
    };
    this.filling.set(accountId, b);
    return b;
  }

  private grown(buffer: Buffer, size: number, used: number): Buffer {
    const bigger = Buffer.allocUnsafeSlow(size);
    buffer.copy(bigger, 0, 0, used);
    return bigger;
  }

  private submit(b: Batch): void {
    this.filling.delete(b.accountId);
    const n = b.ids.length;
    if (n === 0) return;
    const dimension = Math.max(1, Math.floor((b.sealedLength - SEAL_OVERHEAD) / 4));
    const sealedOffsets = new Uint32Array(n + 1);
    for (let i = 1; i <= n; i++) sealedOffsets[i] = i * b.sealedLength;
    const aadOffsets = b.aadOffsets.subarray(0, n + 1);
    // A failing call (not a row) has no row to blame: it ranks first.
    this.loader.add(-1, async () => {
      if (this.openSealed) {
        const outcome = await this.openSealed({
          accountId: b.accountId, ids: b.ids, dimension, sealed: b.sealed.subarray(0, n * b.sealedLength), sealedOffsets,
          aad: b.aad, aadOffsets, key: this.rawKey,
        });
        this.keepSealed(b.sealed, b.sealedLength);
        if (!this.failedAt(outcome, b)) this.rows += n;
        return undefined;
      }
      // The output is taken only now: batches waiting for a turn hold their sealed bytes, not their rows.
      const out = this.output(n * dimension);
      const outcome = await this.opener(this.rawKey, { sealed: b.sealed, sealedOffsets, aad: b.aad, aadOffsets, out, dimension });
      this.keepSealed(b.sealed, b.sealedLength);
      return this.failedAt(outcome, b) ? undefined : out;
    }, (out) => {
      this.rows += n;
      this.onRows({ accountId: b.accountId, ids: b.ids, data: out, dimension, release: () => this.keepOutput(out, n) });
    });
  }

  /** Whether a row of the batch did not open; the failure is recorded with its place in the stream. */
  private failedAt(outcome: SealedBatchOutcome, b: Batch): boolean {
    if (outcome.failedRow < 0) return false;
    const row = outcome.failedRow;
    this.fail(b.seqs[row], sealFailure(outcome.reason, this.settings, b.accountId, b.ids[row], outcome.bytes, outcome.version));
    return true;
  }

  private output(values: number): Float32Array {
    const at = this.spareOut.findIndex((s) => s.length === values);
    return at >= 0 ? this.spareOut.splice(at, 1)[0] : new Float32Array(values);
  }

  // Whole batches' memory is reused rather than allocated and faulted in again; a small batch's is not kept.
  private keepOutput(out: Float32Array, rows: number): void {
    if (this.loader.aborted || rows !== BLOCK || this.spareOut.length >= 2) return;
    this.spareOut.push(out);
  }

  private keepSealed(sealed: Buffer, sealedLength: number): void {
    if (this.loader.aborted || sealed.length !== BLOCK * sealedLength || this.spareSealed.length > BATCHES_QUEUED) return;
    this.spareSealed.push(sealed);
  }
}
