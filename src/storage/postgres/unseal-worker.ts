// Parsing and unsealing the persons' templates of a binary COPY stream in JavaScript: the start-up build's
// path where the addon cannot open them natively (./native-unsealer.ts) or FACE_CHECK_TEMPLATE_UNSEAL=js.
// At 100k persons the build's CPU is then mostly here (one AES-256-GCM set-up and open per ~2.8 KB template,
// ~10 µs, plus its garbage): on the main thread it ran on one core while the other only had the server's COPY. A
// worker per COPY part lets every core unseal while the main thread only forwards the server's bytes. The
// worker packs the unsealed float32 rows of each account into blocks of 4,096 and moves each block back
// (transferred, not copied) for the index's native load; the main thread gives the block's memory back once
// the index has copied it, so the worker fills warm pages instead of faulting in fresh ones.
//
// The code is JavaScript source (run with `eval`, as the snapshot workers are), so it runs the same in a
// worker, in the compiled service and under the tests' TypeScript loader; the same source also runs on the
// calling thread (inProcessUnsealer) where a worker does not pay off.
import type crypto from 'node:crypto';
import { Worker } from 'node:worker_threads';

import { RETIRE_SOURCE, retireWorker } from '../../threads/retire';
import { SealError } from '../crypto/aead';
import { BinaryCopyParser, type CopyPartSink } from './template-copy';

/** Unsealed templates of one account, `ids[i]`'s template at data[i * dimension …]. */
export interface TemplateRows {
  accountId: string;
  ids: string[];
  data: Float32Array;
  dimension: number;
  /** Call once the data has been copied (the index's load settled): its memory is reused. */
  release(): void;
}

export interface UnsealSettings {
  key: crypto.KeyObject;
  /** The sealer's place name; the AAD is JSON of [place, account, person, model], as the sealer builds it. */
  place: string;
  modelId: string;
}

const UNSEAL_SOURCE = String.raw`
const crypto = require('node:crypto');
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
${BinaryCopyParser.toString()}
const BLOCK = 4096;
const FIRST = 64;
const NONCE = 12;
const TAG = 16;
function sealFailure(message) {
  const err = new Error(message);
  err.sealError = true;
  return err;
}
// emit(accountId, ids, data, dimension): data is a Float32Array view of a buffer the caller owns from then on.
function makeUnsealer(key, place, modelId, emit) {
  let rows = 0;
  const filling = new Map();
  const large = new Set();  // accounts that filled a block: their next one is allocated whole
  const spare = [];  // whole blocks given back: reused rather than allocated and faulted in again
  function flush(accountId) {
    const b = filling.get(accountId);
    filling.delete(accountId);
    if (b.ids.length >= BLOCK) large.add(accountId);
    emit(accountId, b.ids, b.data.subarray(0, b.ids.length * b.dimension), b.dimension);
  }
  function open(accountId, personId, sealed) {
    const what = 'storage ' + place + ' ' + JSON.stringify([accountId, personId, modelId]);
    if (sealed.length < 1 + NONCE + TAG) throw sealFailure(what + ': sealed value of ' + sealed.length + ' bytes is too short');
    if (sealed[0] !== 1) throw sealFailure(what + ': sealed value version ' + sealed[0] + ', this program reads 1');
    const end = sealed.length - TAG;
    const d = crypto.createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 1 + NONCE), { authTagLength: TAG });
    d.setAAD(Buffer.from(JSON.stringify([place, accountId, personId, modelId]), 'utf8'));
    d.setAuthTag(sealed.subarray(end));
    const plain = d.update(sealed.subarray(1 + NONCE, end));
    try { d.final(); } catch (e) {
      throw sealFailure(what + ': sealed value does not open (wrong key, damaged, or moved from another record)');
    }
    return plain;
  }
  function row(accountId, personId, sealed) {
    const plain = open(accountId, personId, sealed);
    if (plain.length % 4 !== 0) throw sealFailure('storage: template of ' + plain.length + ' bytes is not float32');
    const dimension = plain.length / 4;
    let b = filling.get(accountId);
    if (b && b.dimension !== dimension) {
      flush(accountId);  // another dimension: a load of its own, which the index refuses with a clear error
      b = undefined;
    }
    if (!b) {
      // Small first: an account of a few persons must not hold a whole block's memory.
      let data;
      if (large.has(accountId)) {
        const at = spare.findIndex((s) => s.length === BLOCK * dimension);
        data = at >= 0 ? spare.splice(at, 1)[0] : new Float32Array(BLOCK * dimension);
      } else {
        data = new Float32Array(FIRST * dimension);
      }
      b = { ids: [], data, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), dimension };
      filling.set(accountId, b);
    }
    const at = b.ids.length * plain.length;
    if (at + plain.length > b.bytes.length) {
      const data = new Float32Array(Math.min(BLOCK, 2 * b.ids.length) * dimension);
      const grown = new Uint8Array(data.buffer);
      grown.set(b.bytes);
      b.data = data;
      b.bytes = grown;
    }
    b.bytes.set(plain, at);
    b.ids.push(personId);
    rows++;
    if (b.ids.length >= BLOCK) flush(accountId);
  }
  // Rows come out of the one binary COPY parser (./template-copy.ts, its source inlined below).
  const parser = new BinaryCopyParser((fields) => {
    if (fields.length !== 3) throw new Error('COPY: a row of ' + fields.length + ' fields, expected account, person and template');
    if (fields.some((f) => f === null)) throw new Error('COPY: a NULL field');
    row(fields[0].toString('utf8'), fields[1].toString('utf8'), fields[2]);
  });
  function push(chunk) {
    parser.push(chunk);
  }
  function end() {
    for (const accountId of [...filling.keys()]) flush(accountId);
    return { rows, finished: parser.finished };
  }
  function recycle(buffer) {
    // The largest few kept: a small account's first block is not worth a place.
    spare.push(new Float32Array(buffer));
    spare.sort((a, b) => b.length - a.length);
    spare.length = Math.min(spare.length, 4);
  }
  return { push, end, recycle };
}
`;

// An aborted copy sets the shared stop flag: the chunks already queued are then skipped, not unsealed, and
// the retire message behind them comes at once.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
${UNSEAL_SOURCE}
${RETIRE_SOURCE}
let unsealer;
let stop;
let failed = false;
parentPort.on('message', (m) => {
  if (retiring(m) || failed || (stop && Atomics.load(stop, 0) !== 0)) return;
  try {
    if (m.init) {
      stop = m.init.stop;
      unsealer = makeUnsealer(m.init.key, m.init.place, m.init.modelId, (accountId, ids, data, dimension) =>
        parentPort.postMessage({ block: { accountId, ids, data, dimension } }, [data.buffer]));
    } else if (m.chunk) {
      unsealer.push(Buffer.from(m.chunk, 0, m.length));
    } else if (m.recycle) {
      unsealer.recycle(m.recycle);
    } else if (m.end) {
      parentPort.postMessage({ done: unsealer.end() });
    }
  } catch (err) {
    failed = true;
    parentPort.postMessage({ error: { seal: !!err.sealError, message: String(err && err.message) } });
  }
});
`;

type Unsealer = { push(chunk: Buffer): void; end(): { rows: number; finished: boolean }; recycle(buffer: ArrayBuffer): void };
type MakeUnsealer = (key: crypto.KeyObject, place: string, modelId: string,
  emit: (accountId: string, ids: string[], data: Float32Array, dimension: number) => void) => Unsealer;

let compiled: MakeUnsealer | undefined;

function failureOf(err: { seal?: boolean; sealError?: boolean; message: string }): Error {
  return err.seal || err.sealError ? new SealError(err.message) : new Error(err.message);
}

/** The same parsing and unsealing on the calling thread (one small stream, or where workers are not wanted). */
export function inProcessUnsealer(settings: UnsealSettings, onRows: (rows: TemplateRows) => void): CopyPartSink {
  compiled ??= new Function('require', `${UNSEAL_SOURCE}\nreturn makeUnsealer;`)(require) as MakeUnsealer;
  let aborted = false;
  const unsealer = compiled(settings.key, settings.place, settings.modelId, (accountId, ids, data, dimension) => {
    if (!aborted) onRows({ accountId, ids, data, dimension, release: () => unsealer.recycle(data.buffer as ArrayBuffer) });
  });
  const rethrown = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      throw failureOf(err as Error & { sealError?: boolean });
    }
  };
  return {
    push: (chunk) => { if (!aborted) rethrown(() => unsealer.push(chunk)); },
    end: async () => (aborted ? { rows: 0, finished: false } : rethrown(() => unsealer.end())),
    abort: () => { aborted = true; },
  };
}

/** Bytes gathered before a message to the worker: one message per ~90 rows rather than per row. */
const BATCH = 256 * 1024;

/**
 * A worker thread that parses and unseals one COPY stream. Start it before the stream (it boots in ~40 ms,
 * meanwhile its input queues). `onRows` runs on the calling thread for every block the worker hands back.
 */
export class UnsealWorker implements CopyPartSink {
  private readonly worker: Worker;
  /** Set once the copy is over or aborted: the worker skips whatever is still queued. */
  private readonly stop = new Int32Array(new SharedArrayBuffer(4));
  private batch = Buffer.allocUnsafeSlow(BATCH);
  private used = 0;
  private failure: Error | undefined;
  private closed = false;
  private readonly outcome: Promise<{ rows: number; finished: boolean }>;
  /** The thread's exit code: 0 once it retired on its own (../../threads/retire.ts), 1 if it had to be terminated. */
  readonly exited: Promise<number>;

  constructor(settings: UnsealSettings, onRows: (rows: TemplateRows) => void) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true });
    this.exited = new Promise((resolve) => this.worker.once('exit', resolve));
    this.outcome = new Promise((resolve, reject) => {
      this.worker.on('message', (m: { block?: Omit<TemplateRows, 'release'>; done?: { rows: number; finished: boolean };
        error?: { seal: boolean; message: string } }) => {
        if (m.block) {
          if (this.closed) return;  // aborted: a block already on its way is dropped
          const { data } = m.block;
          onRows({ ...m.block, release: () => this.recycle(data.buffer as ArrayBuffer) });
        } else if (m.done) {
          resolve(m.done);
        } else if (m.error) {
          this.failure ??= failureOf(m.error);
          reject(this.failure);
        }
      });
      this.worker.on('error', (err) => { this.failure ??= err; reject(err); });
      this.worker.on('exit', () => reject(this.failure ?? new Error('unseal worker: exited before the end of its stream')));
    });
    this.outcome.catch(() => undefined);  // observed by end(); a failure before it must not be unhandled
    this.worker.postMessage({ init: { key: settings.key, place: settings.place, modelId: settings.modelId, stop: this.stop } });
  }

  push(chunk: Buffer): void {
    // The worker's failure stops the stream here rather than at its end.
    if (this.failure) throw this.failure;
    let from = 0;
    while (from < chunk.length) {
      const n = Math.min(chunk.length - from, BATCH - this.used);
      chunk.copy(this.batch, this.used, from, from + n);
      this.used += n;
      from += n;
      if (this.used === BATCH) this.send();
    }
  }

  async end(): Promise<{ rows: number; finished: boolean }> {
    if (this.closed) return { rows: 0, finished: false };
    if (this.used) this.send();
    this.worker.postMessage({ end: true });
    try {
      return await this.outcome;
    } finally {
      this.abort();
    }
  }

  /** Stops the worker's work at once; the thread itself retires in the background, never terminated mid-work. */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    Atomics.store(this.stop, 0, 1);
    void retireWorker(this.worker);
  }

  private send(): void {
    const buffer = this.batch.buffer as ArrayBuffer;
    this.worker.postMessage({ chunk: buffer, length: this.used }, [buffer]);
    this.batch = Buffer.allocUnsafeSlow(BATCH);
    this.used = 0;
  }

  private recycle(buffer: ArrayBuffer): void {
    if (!this.closed) this.worker.postMessage({ recycle: buffer }, [buffer]);
  }
}
