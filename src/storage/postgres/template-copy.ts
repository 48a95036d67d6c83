// Reading every template of a model for a node's start-up, as fast as the server can hand them out. The
// paged SELECT (./persons.ts templateBlocks) spends most of its time outside the data: bytea travels as hex
// text (twice its size, decoded in JavaScript) and every page is one more round trip. Here each part is one
// `COPY (SELECT …) TO STDOUT (FORMAT binary)` whose rows arrive as raw buffers (node-pg hands COPY data
// through untouched), on its own pooled connection; by default one part, or several split by a hash of the
// person id run at once, each into a sink of its own (./copy-unsealer.ts: parsed here, opened in batches,
// natively on the other cores), so the server's reading and this process's unsealing overlap. A sink may
// pause its part's reading.
import type { Pool, PoolClient } from 'pg';
import { translated } from '../errors';

export interface CopyTemplatesOptions {
  /** Connections reading at once (hash partitions of the persons); default DEFAULT_COPY_PARTS. */
  parts?: number;
  /** Longest time one part may take, server and client side; default 60 s. */
  timeoutMs?: number;
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * Streams a copy reads at once by default: one. The templates are stored in the table's rows, so one stream
 * is one sequential scan (about as long as this thread takes to parse its rows); each hash part scans the
 * whole table, so two parts double the server's reading, and a join measured slower with two
 * (docs/benchmarks.md).
 */
export const DEFAULT_COPY_PARTS = 1;

/** Parses PostgreSQL's binary COPY stream (header, tuples, trailer) whatever its chunking. */
export class BinaryCopyParser {
  private pending: Buffer = Buffer.alloc(0);
  private headerDone = false;
  finished = false;

  constructor(private readonly onRow: (fields: Array<Buffer | null>) => void) {}

  push(chunk: Buffer): void {
    // Rows never outlive this call: the driver may reuse the chunk's memory for the next message.
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    if (!this.headerDone) {
      if (buf.length < SIGNATURE.length + 8) return this.keep(buf, at);
      if (!buf.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('COPY: not a binary COPY stream');
      const extension = buf.readInt32BE(SIGNATURE.length + 4);
      if (buf.length < SIGNATURE.length + 8 + extension) return this.keep(buf, at);
      at = SIGNATURE.length + 8 + extension;
      this.headerDone = true;
    }
    while (at + 2 <= buf.length) {
      const count = buf.readInt16BE(at);
      if (count === -1) {
        this.finished = true;
        at += 2;
        break;
      }
      const fields: Array<Buffer | null> = new Array(count);
      let p = at + 2;
      let complete = true;
      for (let i = 0; i < count; i++) {
        if (p + 4 > buf.length) { complete = false; break; }
        const len = buf.readInt32BE(p);
        p += 4;
        if (len === -1) { fields[i] = null; continue; }
        if (p + len > buf.length) { complete = false; break; }
        fields[i] = buf.subarray(p, p + len);
        p += len;
      }
      if (!complete) break;
      this.onRow(fields);
      at = p;
    }
    this.keep(buf, at);
  }

  private keep(buf: Buffer, from: number): void {
    this.pending = from < buf.length ? Buffer.from(buf.subarray(from)) : Buffer.alloc(0);
  }
}

/** The connection's socket, as far as a COPY uses it. */
type CopySocket = { pause(): unknown; resume(): unknown; destroy(): unknown };

/** What a COPY's data goes to: `push` false asks for no more until `drained` resolves. */
type CopyTarget = Pick<CopyPartSink, 'push' | 'drained'>;

/**
 * A query object node-pg runs as is: the COPY in the simple protocol, its data handed to a parser. When the
 * parser asks for a pause, the connection's socket stops reading until it drained (the server waits on
 * its side of the socket).
 */
class CopyOut {
  readonly query_timeout: number;
  /** Set by node-pg around a query with a read timeout: calling it clears the timer. */
  callback?: (err?: unknown) => void;
  readonly done: Promise<void>;
  private settle!: (err?: unknown) => void;
  private failure: unknown;
  private stream: CopySocket | undefined;
  private resumed: Promise<void> | undefined;

  constructor(private readonly text: string, private readonly parser: CopyTarget, timeoutMs: number) {
    this.query_timeout = timeoutMs;
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = (err) => {
        this.callback?.(err);
        this.callback = undefined;
        if (err) reject(err);
        else resolve();
      };
    });
  }

  submit(connection: { query(text: string): void; stream?: CopySocket }): void {
    this.stream = connection.stream;
    connection.query(this.text);
  }

  /**
   * Ends the statement by closing its connection (the server would otherwise stream the rest of the table):
   * `done` then rejects with `reason`, and nothing more reaches the parser.
   */
  stop(reason: Error): void {
    this.failure ??= reason;
    this.stream?.destroy();
  }

  /** Resolves once the socket reads again (at once when it was never paused). */
  flowing(): Promise<void> {
    return this.resumed ?? Promise.resolve();
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    if (this.failure) return;
    try {
      if (this.parser.push(msg.chunk) === false && this.parser.drained && this.stream && !this.resumed) {
        const stream = this.stream;
        stream.pause();
        this.resumed = this.parser.drained().then(() => {
          this.resumed = undefined;
          stream.resume();
        });
      }
    } catch (err) {
      this.failure = err;  // reported once the server is done with the statement
    }
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}

  handleError(err: unknown): void {
    this.failure ??= err;
    this.settle(this.failure);
  }

  handleReadyForQuery(): void {
    this.settle(this.failure);
  }
}

function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * What one part's bytes feed: `push` per message, then `end` for the rows and whether the trailer came. A
 * sink with `drained` may answer a push with false: its stream then stops reading until drained resolves.
 * After `abort`, nothing more is delivered, and `end` (always called) settles once nothing more can be.
 */
export interface CopyPartSink {
  push(chunk: Buffer): boolean | void;
  drained?(): Promise<void>;
  end(): Promise<{ rows: number; finished: boolean }>;
  /** The copy failed: stop, deliver nothing more. */
  abort(): void;
}

/**
 * Streams the rows (account_id, person_id, sealed_template) of every person of `modelId` (of one account if
 * given) in `parts` binary COPY streams at once, each into the sink `sinkFor(part)` made before its
 * connection is taken (a worker boots meanwhile). Resolves with the count once every part and its sink
 * finished. A part that fails (the server, the connection, a sink) fails the whole: every sink is aborted,
 * the other parts' statements are ended, and the promise settles only once no sink can deliver anything
 * more, so a caller that retries never has an old copy still writing into what it discarded.
 */
export async function copyTemplateParts(pool: Pool, modelId: string, sinkFor: (part: number) => CopyPartSink,
  options: CopyTemplatesOptions & { accountId?: string } = {}): Promise<number> {
  const parts = Math.max(1, Math.floor(options.parts ?? DEFAULT_COPY_PARTS));
  const timeoutMs = options.timeoutMs ?? 60_000;
  const sinks = Array.from({ length: parts }, (_, part) => sinkFor(part));
  const running = new Set<CopyOut>();
  let failure: { error: unknown } | undefined;
  const stop = (error: unknown): void => {
    if (failure) return;
    failure = { error };
    for (const sink of sinks) sink.abort();
    const reason = new Error('COPY: stopped, another part of the copy failed');
    for (const copy of running) copy.stop(reason);
  };

  const onePart = async (part: number): Promise<number> => {
    const filter = [`model_id = ${literal(modelId)}`];
    if (options.accountId !== undefined) filter.push(`account_id = ${literal(options.accountId)}`);
    if (parts > 1) filter.push(`(hashtext(person_id) & 2147483647) % ${parts} = ${part}`);
    // One transaction, so the longer timeout ends with it and the pooled connection keeps its own.
    const text = `BEGIN; SET LOCAL statement_timeout = ${timeoutMs};
      COPY (SELECT account_id, person_id, sealed_template FROM persons WHERE ${filter.join(' AND ')}) TO STDOUT (FORMAT binary);
      COMMIT`;
    const sink = sinks[part];
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw translated(err);
    }
    let broken: unknown;
    // A checked-out connection has no pool listener: without this one, a connection lost mid-copy would
    // end the process instead of failing the copy.
    const onError = (err: unknown) => { broken ??= err; };
    client.on('error', onError);
    try {
      if (failure) throw new Error('COPY: not started, another part of the copy failed');
      const copy = new CopyOut(text, sink, timeoutMs + 1_000);
      running.add(copy);
      try {
        client.query(copy as never);
        await copy.done;
        await copy.flowing();  // the connection goes back to the pool reading
      } finally {
        running.delete(copy);
      }
    } catch (err) {
      broken ??= err;
      throw translated(err);
    } finally {
      client.removeListener('error', onError);
      // A connection left inside a failed transaction is not given back to the pool.
      client.release(broken ? true : undefined);
    }
    const { rows, finished } = await sink.end();
    if (!finished) throw new Error('COPY: the stream ended without its trailer');
    return rows;
  };

  const counts = await Promise.allSettled(sinks.map(async (sink, part) => {
    try {
      return await onePart(part);
    } catch (err) {
      stop(err);
      // What the sink still has in flight settles before the copy does.
      await sink.end().catch(() => undefined);
      throw err;
    }
  }));
  if (failure) throw failure.error;
  return counts.reduce((sum, c) => sum + (c.status === 'fulfilled' ? c.value : 0), 0);
}
