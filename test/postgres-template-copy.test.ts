// The binary COPY parser behind a PostgreSQL node's start-up build: rows come out whole and in order however
// the stream is cut into messages, NULLs stay NULL, and a stream that is not binary COPY is refused.
import crypto from 'node:crypto';
import t from 'tap';
import { BinaryCopyParser } from '../src/storage/postgres/template-copy';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

function int16(n: number): Buffer { const b = Buffer.alloc(2); b.writeInt16BE(n); return b; }
function int32(n: number): Buffer { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; }

function stream(rows: Array<Array<Buffer | null>>, extension = Buffer.alloc(0)): Buffer {
  const parts = [SIGNATURE, int32(0), int32(extension.length), extension];
  for (const row of rows) {
    parts.push(int16(row.length));
    for (const f of row) parts.push(f === null ? int32(-1) : Buffer.concat([int32(f.length), f]));
  }
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

const rows = Array.from({ length: 50 }, (_, i) => [Buffer.from(`acc${i % 3}`), Buffer.from(`person-${i}`), i === 7 ? null : crypto.randomBytes(100 + i)]);

t.test('rows whole and in order for any cut of the stream', async (t) => {
  const bytes = stream(rows, Buffer.from('ext'));
  for (const cut of [1, 2, 3, 7, 64, 1000, bytes.length]) {
    const got: Array<Array<Buffer | null>> = [];
    // Copies: the parser's buffers are only valid during the callback.
    const parser = new BinaryCopyParser((fields) => got.push(fields.map((f) => (f === null ? null : Buffer.from(f)))));
    for (let at = 0; at < bytes.length; at += cut) {
      // A fresh buffer per message, reused afterwards as the driver may do.
      const chunk = Buffer.from(bytes.subarray(at, at + cut));
      parser.push(chunk);
      chunk.fill(0);
    }
    t.ok(parser.finished, `cut ${cut}: trailer seen`);
    t.same(got, rows, `cut ${cut}: every row`);
  }
});

t.test('a stream that is not binary COPY is refused', async (t) => {
  const parser = new BinaryCopyParser(() => t.fail('no row'));
  t.throws(() => parser.push(Buffer.from('account\tperson\t\\x00ff\n'.repeat(3))), /not a binary COPY stream/);
});

t.test('an unfinished stream is not finished', async (t) => {
  const bytes = stream(rows.slice(0, 3));
  const parser = new BinaryCopyParser(() => undefined);
  parser.push(bytes.subarray(0, bytes.length - 5));
  t.notOk(parser.finished);
});
