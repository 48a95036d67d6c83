// The binary COPY parser behind a PostgreSQL node's start-up build: rows come out whole and in order however
// the stream is cut into messages, NULLs stay NULL, and a stream that is not binary COPY is refused. Over a
// real server, copyTemplates hands over exactly the templates the repository opens one by one, with either
// opener (the addon's or JavaScript's), in blocks of one account of at most 1,024; a sealed value that does not open fails the copy with a SealError naming the person. A sink that
// asks for a pause stops its connection's reading until it drained, gets every row, and the connection
// goes back to the pool serving. A part that fails stops the other parts' statements, and the copy settles
// only once no sink can deliver anything more; a connection lost mid-copy rejects the copy and leaves the
// process and the pool serving.
import crypto from 'node:crypto';
import t, { type Test } from 'tap';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { SealError } from '../../../src/storage/crypto/aead';
import type { PgPersonRepository } from '../../../src/storage/postgres/persons';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { BinaryCopyParser, copyTemplateParts, type CopyPartSink } from '../../../src/storage/postgres/template-copy';
import type { OpenedTemplates } from '../../../src/storage/interfaces';
import { sealedBatchAvailable } from '../../../src/storage/crypto/sealed-batch';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

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

const skip = postgresSkipReason();
if (skip) t.test('copyTemplates over a server', async (t) => { t.plan(0, skip); });
else void t.test('copyTemplates over a server', overServer);

async function overServer(t: Test): Promise<void> {
  const MODEL = templateModelId();
  const DIM = templateSize();
  const { pg, keyFile } = await postgresCluster(t);
  const store = await openPostgresStore(postgresSettings(await pg.createDatabase('copy'), { poolSize: 4 }), { keyFile });
  t.teardown(() => store.close());
  const now = new Date().toISOString();
  const image = crypto.randomBytes(32);
  // One account over a whole block (5,000), two small ones, and a person of another model.
  const sizes: Record<string, number> = { big: 5000, small: 3, one: 1 };
  for (const [accountId, n] of Object.entries(sizes)) {
    for (let from = 0; from < n; from += 1000) {
      await store.persons.createMany(accountId, Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({
        personId: `p${from + i}`, modelId: MODEL, referenceImage: image,
        template: Float32Array.from({ length: DIM }, () => Math.random() - 0.5),
      })), now);
    }
  }
  await store.persons.create('small', 'other-model', { modelId: `${MODEL}+old`, template: new Float32Array(DIM), referenceImage: image }, now);

  const collect = async (unsealer: 'native' | 'js', parts = 2) => {
    const got = new Map<string, string>();
    const blocks: Array<{ accountId: string; n: number }> = [];
    const count = await (store.persons as PgPersonRepository).copyTemplates(MODEL, (rows: OpenedTemplates) => {
      t.equal(rows.data.length, rows.ids.length * rows.dimension);
      blocks.push({ accountId: rows.accountId, n: rows.ids.length });
      rows.ids.forEach((id, i) => got.set(`${rows.accountId}/${id}`,
        Buffer.from(rows.data.buffer, rows.data.byteOffset + i * rows.dimension * 4, rows.dimension * 4).toString('base64')));
      rows.release();
    }, { unsealer, parts });
    return { count, got, blocks };
  };

  // Where the addon cannot open AES-GCM, 'native' falls back to JavaScript, which is then run twice.
  const openers = sealedBatchAvailable().available ? ['native', 'js'] as const : ['js'] as const;
  await t.test('either opener hands over the same templates as the repository opens one by one', async (t) => {
    const expected = new Map<string, string>();
    for (const [accountId, n] of Object.entries(sizes)) {
      const ids = Array.from({ length: n }, (_, i) => `p${i}`);
      const templates = await store.persons.templatesOf(accountId, ids);
      ids.forEach((id, i) => expected.set(`${accountId}/${id}`, Buffer.from(templates[i]!.buffer, templates[i]!.byteOffset, templates[i]!.byteLength).toString('base64')));
    }
    for (const [unsealer, parts] of [...openers.map((o) => [o, 2] as const), [openers[0], 1] as const]) {
      const { count, got, blocks } = await collect(unsealer, parts);
      t.equal(count, 5004, `${unsealer}, ${parts} parts: every person of the model counted`);
      t.same(got, expected, `${unsealer}, ${parts} parts: identical templates`);
      t.ok(blocks.every((b) => b.n >= 1 && b.n <= 1024), 'blocks of at most 1,024');
      t.ok(blocks.some((b) => b.accountId === 'big' && b.n === 1024), 'a whole block for the large account');
    }
  });

  await t.test('a sink that asks for a pause: reading stops until it drained, every row arrives', async (t) => {
    const HOLD_EVERY = 500;
    let rowsSeen = 0;
    let sinceHold = 0;
    let holding = false;
    let holds = 0;
    let mostWhileHeld = 0;
    let whileHeld = 0;
    const parser = new BinaryCopyParser(() => { rowsSeen++; sinceHold++; });
    const sink: CopyPartSink = {
      push(chunk) {
        if (holding) mostWhileHeld = Math.max(mostWhileHeld, ++whileHeld);
        parser.push(chunk);
        if (holding || sinceHold < HOLD_EVERY) return true;
        holding = true;
        holds++;
        whileHeld = 0;
        return false;
      },
      // Long enough that an unpaused stream would deliver hundreds of rows meanwhile.
      drained: () => new Promise((resolve) => setTimeout(() => { holding = false; sinceHold = 0; resolve(); }, 40)),
      end: async () => ({ rows: rowsSeen, finished: parser.finished }),
      abort: () => undefined,
    };
    const count = await copyTemplateParts(store.pool.pool, MODEL, () => sink, { parts: 1 });
    t.equal(count, 5004, 'every row');
    t.ok(holds >= 5, `paused ${holds} times`);
    // A message per row; what one socket read had already brought (64 KB: ~22 rows) is all that follows a pause.
    t.ok(mostWhileHeld <= 64, `at most ${mostWhileHeld} messages while paused`);
    const answers = await Promise.all(Array.from({ length: 4 }, () => store.pool.query('SELECT 1 AS one')));
    t.ok(answers.every((a) => a.rows[0].one === 1), 'every pooled connection serves again');
  });

  await t.test('a sealed value that does not open fails the copy, naming the person', async (t) => {
    await store.pool.query(`UPDATE persons SET sealed_template = set_byte(sealed_template, 40, (get_byte(sealed_template, 40) + 1) % 256)
      WHERE account_id = 'big' AND person_id = 'p1234'`);
    t.teardown(() => store.pool.query("DELETE FROM persons WHERE account_id = 'big' AND person_id = 'p1234'"));
    for (const unsealer of openers) {
      const err = await collect(unsealer).then(() => undefined, (e: unknown) => e);
      t.type(err, SealError, `${unsealer}: a SealError`);
      t.match((err as Error).message, /"big","p1234"/, `${unsealer}: names the person`);
      t.match((err as Error).message, /does not open/);
    }
  });

  await t.test('a part that fails stops the others, and nothing reaches a sink once the copy settled', async (t) => {
    let settled = false;
    let lateCalls = 0;
    const rowsOf = [0, 0];
    const aborted = [false, false];
    const sinkFor = (part: number): CopyPartSink => {
      const parser = new BinaryCopyParser(() => {
        if (settled) lateCalls++;
        rowsOf[part]++;
        // Part 0 fails on its tenth row; part 1 reads on at the server's pace.
        if (part === 0 && rowsOf[part] === 10) throw new Error('sink 0: refused');
      });
      return {
        push: (chunk) => { if (settled) lateCalls++; parser.push(chunk); },
        // Work still in flight when the copy fails (a batch being opened) ends after a while and then
        // delivers, unless aborted.
        end: () => new Promise((resolve) => setTimeout(() => {
          if (!aborted[part]) { if (settled) lateCalls++; }
          resolve({ rows: rowsOf[part], finished: parser.finished });
        }, 150)),
        abort: () => { aborted[part] = true; },
      };
    };
    const err = await copyTemplateParts(store.pool.pool, MODEL, sinkFor, { parts: 2 }).then(() => undefined, (e: unknown) => e);
    settled = true;
    t.match((err as Error)?.message, /sink 0: refused/, 'the first failure is the copy\'s');
    t.same(aborted, [true, true], 'every sink aborted');
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.ok(rowsOf[1] < 2500, `the other part's statement ended early (${rowsOf[1]} of ~2,500 rows read)`);
    t.equal(lateCalls, 0, 'no sink call after the copy settled');
    const answers = await Promise.all(Array.from({ length: 4 }, () => store.pool.query('SELECT 1 AS one')));
    t.ok(answers.every((a) => a.rows[0].one === 1), 'every pooled connection serves again');
  });

  await t.test('a connection lost mid-copy fails the copy, not the process', async (t) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    let rowsSeen = 0;
    const parser = new BinaryCopyParser(() => { rowsSeen++; });
    let paused = false;
    const sink: CopyPartSink = {
      push(chunk) {
        parser.push(chunk);
        if (paused || rowsSeen < 100) return true;
        paused = true;
        return false;
      },
      drained: () => held,
      end: async () => ({ rows: rowsSeen, finished: parser.finished }),
      abort: () => undefined,
    };
    const copying = copyTemplateParts(store.pool.pool, MODEL, () => sink, { parts: 1 }).then(() => undefined, (e: unknown) => e);
    for (let i = 0; i < 200 && !paused; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    t.ok(paused, 'the copy is held mid-stream');
    const { rows: ended } = await store.pool.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE query LIKE 'BEGIN; SET LOCAL statement_timeout%' AND pid <> pg_backend_pid()");
    t.same(ended.map((r) => r.ended), [true], 'its backend terminated');
    release();
    const err = await copying;
    t.type(err, Error, 'the copy rejects');
    t.ok(rowsSeen < 5004, `it did not complete (${rowsSeen} rows)`);
    const answers = await Promise.all(Array.from({ length: 4 }, () => store.pool.query('SELECT 1 AS one')));
    t.ok(answers.every((a) => a.rows[0].one === 1), 'the pool serves again');
  });
}
