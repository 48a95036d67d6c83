// Parsing and unsealing the persons' templates of a binary COPY stream in JavaScript: the start-up build's
// path where the addon cannot open them natively (./native-unsealer.ts) or FACE_CHECK_TEMPLATE_UNSEAL=js.
// The build's CPU is then mostly here (one AES-256-GCM set-up and open per template, plus its garbage): on
// the main thread it ran on one core while the others only had the server's COPY. A worker per COPY part lets every core unseal while the main thread only forwards the server's bytes. The
// worker packs the unsealed float32 rows of each account into blocks of 4,096 and moves each block back
// (transferred, not copied) for the index's native load; the main thread gives the block's memory back once
// the index has copied it, so the worker fills warm pages instead of faulting in fresh ones.
//
// The code is JavaScript source (run with `eval`, as the snapshot workers are), so it runs the same in a
// worker, in the compiled service and under the tests' TypeScript loader; the same source also runs on the
// calling thread (inProcessUnsealer) where a worker does not pay off.
import type crypto from 'node:crypto';

import { WorkerPool } from '../../threads/worker-pool';
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

// Why a template did not open, in the words of both openers (./native-unsealer.ts words its SealErrors here).
const SEAL_FAILURE_SOURCE = `
function sealFailure(fault, place, accountId, personId, modelId, bytes, version) {
  const what = 'storage ' + place + ' ' + JSON.stringify([accountId, personId, modelId]);
  const message = fault === 'short' ? what + ': sealed value of ' + bytes + ' bytes is too short'
    : fault === 'version' ? what + ': sealed value version ' + version + ', this program reads 1'
    : fault === 'tag' ? what + ': sealed value does not open (wrong key, damaged, or moved from another record)'
    : 'storage: template of ' + bytes + ' bytes is not float32';
  return Object.assign(new Error(message), { sealError: true });
}
`;

type SealFault = 'short' | 'version' | 'tag' | 'size' | '';
const sealFailureHere = new Function(`${SEAL_FAILURE_SOURCE}\nreturn sealFailure;`)() as
  (fault: SealFault, place: string, accountId: string, personId: string, modelId: string, bytes: number, version?: number) => Error;

/** The SealError of a template that did not open, as the JavaScript opener words it. */
export function sealFailure(fault: SealFault, settings: UnsealSettings, accountId: string, personId: string, bytes: number, version?: number): SealError {
  return new SealError(sealFailureHere(fault, settings.place, accountId, personId, settings.modelId, bytes, version).message);
}

const UNSEAL_SOURCE = String.raw`
const crypto = require('node:crypto');
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
${BinaryCopyParser.toString()}
const BLOCK = 4096;
const FIRST = 64;
const NONCE = 12;
const TAG = 16;
${SEAL_FAILURE_SOURCE}
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
    const fail = (fault) => sealFailure(fault, place, accountId, personId, modelId, sealed.length, sealed[0]);
    if (sealed.length < 1 + NONCE + TAG) throw fail('short');
    if (sealed[0] !== 1) throw fail('version');
    const end = sealed.length - TAG;
    const d = crypto.createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 1 + NONCE), { authTagLength: TAG });
    d.setAAD(Buffer.from(JSON.stringify([place, accountId, personId, modelId]), 'utf8'));
    d.setAuthTag(sealed.subarray(end));
    const plain = d.update(sealed.subarray(1 + NONCE, end));
    try { d.final(); } catch (e) { throw fail('tag'); }
    return plain;
  }
  function row(accountId, personId, sealed) {
    const plain = open(accountId, personId, sealed);
    if (plain.length % 4 !== 0) throw sealFailure('size', place, accountId, personId, modelId, plain.length);
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

// The workers' handler (../../threads/worker-pool.ts runs it): an aborted copy sets the pool's stop flag, so
// the chunks already queued are skipped, not unsealed, and the retire message behind them comes at once.
const HANDLE_SOURCE = `
${UNSEAL_SOURCE}
let unsealer;
function handle(m, emit) {
  if (m.init) {
    unsealer = makeUnsealer(m.init.key, m.init.place, m.init.modelId, (accountId, ids, data, dimension) =>
      emit({ accountId, ids, data, dimension }, [data.buffer]));
  } else if (m.chunk) {
    unsealer.push(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
  } else if (m.recycle) {
    unsealer.recycle(m.recycle);
  } else if (m.end) {
    return [unsealer.end()];
  }
}
`;

function failureOf(err: { seal: boolean; message: string }): Error {
  return err.seal ? new SealError(err.message) : new Error(err.message);
}

/** The same parsing and unsealing on the calling thread (one small stream, or where workers are not wanted). */
export function inProcessUnsealer(settings: UnsealSettings, onRows: (rows: TemplateRows) => void): CopyPartSink {
  return new UnsealWorker(settings, onRows, true);
}

/** Bytes gathered before a message to the worker: one message per many rows rather than per row. */
const BATCH = 256 * 1024;

/**
 * A worker thread (or, `here`, the calling thread) that parses and unseals one COPY stream. Start it before
 * the stream (a worker takes a while to boot; meanwhile its input queues). `onRows` runs on the calling
 * thread for every block the worker hands back.
 */
export class UnsealWorker implements CopyPartSink {
  private readonly pool: WorkerPool;
  private batch: Buffer | undefined;
  private used = 0;
  private closed = false;
  private retired!: (code: number) => void;
  /** The thread's exit code: 0 once it retired on its own (../../threads/retire.ts), 1 if it had to be terminated. */
  readonly exited = new Promise<number>((resolve) => { this.retired = resolve; });

  constructor(settings: UnsealSettings, onRows: (rows: TemplateRows) => void, here = false) {
    this.pool = new WorkerPool({ source: HANDLE_SOURCE, size: 1, here, errorOf: failureOf, onEvent: (_, block) => {
      if (this.closed) return;  // aborted: a block already on its way is dropped
      const { data } = block as Omit<TemplateRows, 'release'>;
      onRows({ ...(block as Omit<TemplateRows, 'release'>), release: () => this.recycle(data.buffer as ArrayBuffer) });
    } });
    this.pool.post(0, { init: { key: settings.key, place: settings.place, modelId: settings.modelId } });
    if (!here) this.batch = Buffer.allocUnsafeSlow(BATCH);
  }

  push(chunk: Buffer): void {
    // The worker's failure stops the stream here rather than at its end.
    const failure = this.pool.failure(0);
    if (failure) throw failure;
    if (this.closed) return;
    // On this thread the chunk is parsed at once, before the driver reuses its memory.
    if (!this.batch) return this.pool.post(0, { chunk });
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
    try {
      return await this.pool.request<{ rows: number; finished: boolean }>(0, { end: true });
    } finally {
      this.abort();
    }
  }

  /** Stops the worker's work at once; the thread itself retires in the background, never terminated mid-work. */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.abort();
    void this.pool.close().then(([code]) => this.retired(code));
  }

  private send(): void {
    const buffer = this.batch!.buffer as ArrayBuffer;
    this.pool.post(0, { chunk: new Uint8Array(buffer, 0, this.used) }, [buffer]);
    this.batch = Buffer.allocUnsafeSlow(BATCH);
    this.used = 0;
  }

  private recycle(buffer: ArrayBuffer): void {
    if (!this.closed) this.pool.post(0, { recycle: buffer }, [buffer]);
  }
}
