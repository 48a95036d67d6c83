// The start-up build's unsealing (src/storage/postgres/copy-unsealer.ts) with the addon's opener against
// JavaScript's (openSealedBatchHere), fed the same binary COPY streams: the same templates for ids that need JSON escaping
// in their AAD, over several batches and accounts; the same SealError, naming the same (first) row, for a
// flipped byte in the ciphertext, tag, nonce or version, a cut value, a plain size that is not float32 and
// a value moved to another person. Then the knob that chooses JavaScript, the addon's argument checks, a
// batch on 1 to 4 threads (rows in place, the lowest bad row named) and copyTemplates over a real server with
// either unsealer. The same streams opened straight into the index (CopyUnsealers with a sealed consumer,
// Collection.loadSealed) give the rows bulkLoad makes of the JavaScript opener's templates, bit for bit, and
// the same SealError; loadSealed itself names the lowest bad row on 1 to 4 threads and loads nothing then.
import crypto from 'node:crypto';
import t, { type Test } from 'tap';
import { templateModelId, templateSize } from '../../../src/engine/template-spec';
import { similarityIndex, type Collection } from '../../../src/similarity-index/similarity-index';
import { SealError, secretKey } from '../../../src/storage/crypto/aead';
import { openSealedBatch, sealedBatchAvailable } from '../../../src/storage/crypto/sealed-batch';
import { DataKeySealer } from '../../../src/storage/crypto/sealer';
import type { OpenedTemplates } from '../../../src/storage/interfaces';
import { chooseTemplateUnsealer, CopyUnsealers, type TemplateUnsealer, type UnsealSettings } from '../../../src/storage/postgres/copy-unsealer';
import { TEMPLATES_PLACE, type PgPersonRepository } from '../../../src/storage/postgres/persons';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import type { CopyPartSink } from '../../../src/storage/postgres/template-copy';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const DIM = 64;
const MODEL = 'model-"x"\\ü';

function int16(n: number): Buffer { const b = Buffer.alloc(2); b.writeInt16BE(n); return b; }
function int32(n: number): Buffer { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; }

interface Row { accountId: string; personId: string; sealed: Buffer }

function copyStream(rows: readonly Row[]): Buffer {
  const parts = [SIGNATURE, int32(0), int32(0)];
  for (const r of rows) {
    parts.push(int16(3));
    for (const f of [Buffer.from(r.accountId), Buffer.from(r.personId), r.sealed]) parts.push(int32(f.length), f);
  }
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

const key = secretKey(crypto.randomBytes(32));
const sealer = new DataKeySealer(key);
const settings: UnsealSettings = { key, place: TEMPLATES_PLACE, modelId: MODEL };
const seal = (accountId: string, personId: string, plain: Uint8Array) => sealer.seal(TEMPLATES_PLACE, [accountId, personId, MODEL], plain);
const template = () => Buffer.from(Float32Array.from({ length: DIM }, () => Math.random() - 0.5).buffer);

// Ids whose AAD JSON needs escaping, or whose UTF-8 differs from their UTF-16 length.
const ODD_IDS = ['quote"d', 'back\\slash', 'ünïcødé', '名前', 'emoji-😀', 'tab\tnew\nline', 'ctl\u0001', "it's", ''];
const ACCOUNTS = ['big "one"', 'småll', 'plain'];

/** Rows of three accounts interleaved: 'big "one"' over two whole batches, the others a few each. */
function sampleRows(): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i < 9000; i++) {
    const accountId = i % 10 === 3 ? ACCOUNTS[1] : i % 10 === 7 ? ACCOUNTS[2] : ACCOUNTS[0];
    const personId = i < ODD_IDS.length * 3 ? `${ODD_IDS[i % ODD_IDS.length]}${i}` : `p${i}`;
    rows.push({ accountId, personId, sealed: seal(accountId, personId, template()) });
  }
  return rows;
}

type Outcome = { count: number; templates: Map<string, string>; blocks: number } | { error: unknown };

/** Feeds a stream to a sink in `cut`-byte messages, as copyTemplateParts does, collecting what it emits. */
async function run(makeSink: (onRows: (rows: OpenedTemplates) => void) => CopyPartSink, stream: Buffer, cut = 65536): Promise<Outcome> {
  const templates = new Map<string, string>();
  let blocks = 0;
  const sink = makeSink((rows) => {
    blocks++;
    if (rows.data.length !== rows.ids.length * rows.dimension) throw new Error('rows and data differ');
    rows.ids.forEach((id, i) => templates.set(`${rows.accountId}/${id}`,
      Buffer.from(rows.data.buffer, rows.data.byteOffset + i * rows.dimension * 4, rows.dimension * 4).toString('base64')));
    rows.release();
  });
  try {
    for (let at = 0; at < stream.length; at += cut) {
      const chunk = Buffer.from(stream.subarray(at, at + cut));
      sink.push(chunk);
      chunk.fill(0);  // the driver may reuse a message's memory
    }
    const { rows, finished } = await sink.end();
    if (!finished) throw new Error('no trailer');
    return { count: rows, templates, blocks };
  } catch (error) {
    sink.abort();
    return { error };
  }
}

async function runWith(unsealer: TemplateUnsealer, stream: Buffer, cut?: number, with_ = settings): Promise<Outcome> {
  let unsealers: CopyUnsealers | undefined;
  try {
    return await run((onRows) => (unsealers = new CopyUnsealers(with_, unsealer, onRows)).sink(), stream, cut);
  } finally {
    unsealers?.close();
  }
}

const runNative = (stream: Buffer, cut?: number, with_ = settings) => runWith('native', stream, cut, with_);
const runJs = (stream: Buffer) => runWith('js', stream);

let collections = 0;
function newCollection(dim = DIM): Collection {
  const c = similarityIndex().createCollection(`native-unseal-${process.pid}-${collections++}`, dim);
  t.teardown(() => { similarityIndex().dropCollection(c.name); });
  return c;
}

/** Every row of every collection as the index keeps it: its float32 template and its int8 row, by account/person. */
async function indexRows(byAccount: Map<string, Collection>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [accountId, c] of byAccount) {
    const dump = await c.exportCodes();
    const keys = dump.count ? dump.keys.split('\0') : [];
    for (let i = 0; i < keys.length; i++) {
      const template = await c.get(keys[i]);
      const code = Buffer.from(dump.codes.subarray(i * dump.stride, (i + 1) * dump.stride)).toString('base64');
      out.set(`${accountId}/${keys[i]}`, `${Buffer.from(template!.buffer).toString('base64')} ${code} ${dump.scales[i]} ${dump.sums[i]}`);
    }
  }
  return out;
}

/** The JavaScript opener's templates bulk-loaded into one collection per account, read back from the index. */
async function jsIntoIndex(js: Outcome): Promise<Map<string, string>> {
  if ('error' in js) throw js.error;
  const byAccount = new Map<string, { ids: string[]; data: Buffer[] }>();
  for (const [where, b64] of js.templates) {
    const [accountId, ...rest] = where.split('/');
    const entry = byAccount.get(accountId) ?? { ids: [], data: [] };
    byAccount.set(accountId, entry);
    entry.ids.push(rest.join('/'));
    entry.data.push(Buffer.from(b64, 'base64'));
  }
  const collectionsOf = new Map<string, Collection>();
  for (const [accountId, { ids, data }] of byAccount) {
    const c = newCollection();
    const bytes = Buffer.concat(data);
    await c.bulkLoad(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4), ids);
    collectionsOf.set(accountId, c);
  }
  return indexRows(collectionsOf);
}

/** The stream opened by the native sink straight into the index (loadSealed), one collection per account, read back. */
async function runIntoIndex(stream: Buffer, cut?: number): Promise<{ count: number; rows: Map<string, string>; blocks: number } | { error: unknown }> {
  const byAccount = new Map<string, Collection>();
  let blocks = 0;
  let chain: Promise<unknown> = Promise.resolve();
  const unsealers = new CopyUnsealers(settings, 'native', () => { throw new Error('unsealed rows handed over'); }, (block) => {
    blocks++;
    const c = byAccount.get(block.accountId) ?? newCollection(block.dimension);
    byAccount.set(block.accountId, c);
    const load = chain.then(() => c.loadSealed({ ...block, keys: block.ids }, block.key));
    chain = load.catch(() => undefined);
    return load;
  });
  try {
    const got = await run(() => unsealers.sink(), stream, cut);
    if ('error' in got) return got;
    return { count: got.count, rows: await indexRows(byAccount), blocks };
  } finally {
    unsealers.close();
  }
}

async function both(stream: Buffer): Promise<{ js: Outcome; native: Outcome; intoIndex: Awaited<ReturnType<typeof runIntoIndex>> }> {
  const js = await runJs(stream);
  return { js, native: await runNative(stream), intoIndex: await runIntoIndex(stream) };
}

const availability = sealedBatchAvailable();
if (!availability.available) {
  t.test('native unsealing', async (t) => { t.plan(0, `not available here: ${availability.reason}`); });
} else {
  void t.test('native unsealing against JavaScript', nativeAgainstJs);
}

async function nativeAgainstJs(t: Test): Promise<void> {
  const rows = sampleRows();

  await t.test('the same templates, counts and accounts for escaped and non-ASCII ids', async (t) => {
    const { js, native } = await both(copyStream(rows));
    if ('error' in js || 'error' in native) throw ('error' in js ? js.error : (native as { error: unknown }).error);
    t.equal(native.count, rows.length, 'every row counted');
    t.equal(js.count, rows.length);
    t.equal(native.templates.size, rows.length, 'every row handed over once');
    t.same(native.templates, js.templates, 'identical bytes for every person');
    const one = rows.find((r) => r.personId.startsWith('emoji'))!;
    t.equal(native.templates.get(`${one.accountId}/${one.personId}`), sealer.open(TEMPLATES_PLACE, [one.accountId, one.personId, MODEL], one.sealed).toString('base64'),
      'and equal to the sealer opening it alone');
    t.ok(native.blocks >= 3, `several batches (${native.blocks})`);
  });

  await t.test('opened straight into the index: the rows bulkLoad makes of the same templates', async (t) => {
    const stream = copyStream(rows);
    const intoIndex = await runIntoIndex(stream);
    if ('error' in intoIndex) throw intoIndex.error;
    t.equal(intoIndex.count, rows.length, 'every row counted');
    t.ok(intoIndex.blocks >= 3, `several sealed blocks (${intoIndex.blocks})`);
    const expected = await jsIntoIndex(await runJs(stream));
    t.equal(intoIndex.rows.size, rows.length, 'every person in the index once');
    t.same(intoIndex.rows, expected, 'identical float32 templates, int8 codes, scales and sums for every person');
  });

  await t.test('messages cut anywhere give the same result', async (t) => {
    const small = rows.slice(0, 300);
    for (const cut of [1, 7, 1000]) {
      const got = await runNative(copyStream(small), cut);
      t.notOk('error' in got, `cut ${cut}: no error`);
      if (!('error' in got)) t.equal(got.count, small.length, `cut ${cut}: every row`);
    }
  });

  const at = 5000;  // in the big account's second batch
  const victim = rows[at];
  const flipped = (i: number) => { const b = Buffer.from(victim.sealed); b[i] ^= 0x01; return b; };
  const odd = seal(victim.accountId, victim.personId, crypto.randomBytes(DIM * 4 + 2));
  const corruptions: Array<[string, Buffer, RegExp]> = [
    ['a flipped ciphertext byte', flipped(40), /does not open/],
    ['a flipped tag byte', flipped(victim.sealed.length - 1), /does not open/],
    ['a flipped nonce byte', flipped(3), /does not open/],
    ['another version byte', (() => { const b = Buffer.from(victim.sealed); b[0] = 2; return b; })(), /version 2, this program reads 1/],
    ['a value cut short', victim.sealed.subarray(0, 20), /20 bytes is too short/],
    ['a value cut by one byte', victim.sealed.subarray(0, victim.sealed.length - 1), /does not open/],
    ['a plain size not float32', odd, /template of 258 bytes is not float32/],
    ['a value moved from another person', rows[at + 1].sealed, /does not open/],
  ];
  for (const [what, sealed, message] of corruptions) {
    await t.test(`${what}: the same SealError`, async (t) => {
      const changed = rows.map((r, i) => (i === at ? { ...r, sealed } : r));
      const { js, native, intoIndex } = await both(copyStream(changed));
      t.ok('error' in js && js.error instanceof SealError, 'JavaScript: a SealError');
      t.ok('error' in native && native.error instanceof SealError, 'native: a SealError');
      const jsMessage = 'error' in js ? (js.error as Error).message : '';
      t.match(jsMessage, message);
      t.ok(jsMessage.includes(JSON.stringify([victim.accountId, victim.personId, MODEL])) || /not float32/.test(jsMessage), 'names the person');
      if (!/not float32/.test(jsMessage)) {
        t.throws(() => sealer.open(TEMPLATES_PLACE, [victim.accountId, victim.personId, MODEL], sealed), { message: jsMessage }, 'in the sealer\'s own words');
      }
      t.equal('error' in native ? (native.error as Error).message : '', jsMessage, 'the same message');
      t.equal('error' in intoIndex ? (intoIndex.error as Error).message : '', jsMessage, 'and opened into the index');
    });
  }

  await t.test('two bad rows: the first in the stream is named, whichever batch opens first', async (t) => {
    // Row 7 belongs to a small account whose only batch is opened at the end, after the big account's first
    // (full) batch failed at row 4000.
    const changed = rows.map((r, i) => (i === 4000 ? { ...r, sealed: r.sealed.subarray(0, 10) } : i === 7 ? { ...r, sealed: rows[8].sealed } : r));
    const { js, native, intoIndex } = await both(copyStream(changed));
    const jsMessage = 'error' in js ? (js.error as Error).message : '';
    t.match(jsMessage, JSON.stringify([rows[7].accountId, rows[7].personId, MODEL]), 'JavaScript names row 7');
    t.equal('error' in native ? (native.error as Error).message : '', jsMessage, 'native too');
    t.equal('error' in intoIndex ? (intoIndex.error as Error).message : '', jsMessage, 'and opened into the index');
  });

  await t.test('another key: no row opens', async (t) => {
    const other = { ...settings, key: secretKey(crypto.randomBytes(32)) };
    const got = await runNative(copyStream(rows.slice(0, 100)), undefined, other);
    t.ok('error' in got && got.error instanceof SealError, 'a SealError');
    t.match('error' in got ? (got.error as Error).message : '', JSON.stringify([rows[0].accountId, rows[0].personId, MODEL]), 'naming the first row');
  });
}

t.test('a copy aborted mid-stream delivers nothing after its abort, with either opener', async (t) => {
  const stream = copyStream(sampleRows().slice(0, 6000));
  for (const unsealer of availability.available ? ['native', 'js'] as const : ['js'] as const) {
    for (let round = 0; round < 4; round++) {
      let aborted = false;
      let late = 0;
      let delivered = 0;
      const unsealers = new CopyUnsealers(settings, unsealer, (rows) => {
        if (aborted) late++;
        delivered += rows.ids.length;
        rows.release();
      });
      const sink = unsealers.sink();
      const cut = 65536;
      const stopAt = Math.floor(stream.length * (round + 1) / 6);
      for (let at = 0; at < stopAt; at += cut) sink.push(Buffer.from(stream.subarray(at, at + cut)));
      if (round % 2) await new Promise((r) => setTimeout(r, 5));  // some batches opened and delivered first
      aborted = true;
      sink.abort();
      const end = await sink.end();
      unsealers.close();
      await new Promise((r) => setTimeout(r, 20));
      t.equal(late, 0, `${unsealer}, round ${round}: nothing delivered after the abort`);
      t.ok(delivered < 6000 && end.rows === delivered, `${unsealer}, round ${round}: ${delivered} delivered before it, and counted`);
      t.notOk(end.finished, 'the stream did not finish');
    }
  }
});

t.test('FACE_CHECK_TEMPLATE_UNSEAL=js chooses JavaScript', async (t) => {
  const before = process.env.FACE_CHECK_TEMPLATE_UNSEAL;
  t.teardown(() => { if (before === undefined) delete process.env.FACE_CHECK_TEMPLATE_UNSEAL; else process.env.FACE_CHECK_TEMPLATE_UNSEAL = before; });
  process.env.FACE_CHECK_TEMPLATE_UNSEAL = 'js';
  t.equal(chooseTemplateUnsealer(), 'js');
  t.equal(chooseTemplateUnsealer('native'), availability.available ? 'native' : 'js', 'an explicit choice wins');
  delete process.env.FACE_CHECK_TEMPLATE_UNSEAL;
  t.equal(chooseTemplateUnsealer(), availability.available ? 'native' : 'js', 'native where available');
  t.equal(chooseTemplateUnsealer('js'), 'js');
});

t.test('openSealedBatch refuses offsets and outputs out of bounds', { skip: !availability.available && availability.reason }, async (t) => {
  const sealed = seal('a', 'b', template());
  const aad = Buffer.from(JSON.stringify([TEMPLATES_PLACE, 'a', 'b', MODEL]));
  const good = {
    sealed, sealedOffsets: Uint32Array.of(0, sealed.length), aad, aadOffsets: Uint32Array.of(0, aad.length),
    out: new Float32Array(DIM), dimension: DIM,
  };
  t.same(await openSealedBatch(key, good), { failedRow: -1, reason: '', bytes: 0, version: 0 }, 'a good batch opens');
  t.same(Buffer.from(good.out.buffer), sealer.open(TEMPLATES_PLACE, ['a', 'b', MODEL], sealed), 'into out');
  await t.rejects(openSealedBatch(key, { ...good, sealedOffsets: Uint32Array.of(0, sealed.length + 1) }), /end past their buffer/);
  await t.rejects(openSealedBatch(key, { ...good, aadOffsets: Uint32Array.of(5, 2) }), /decrease/);
  await t.rejects(openSealedBatch(key, { ...good, out: new Float32Array(DIM - 1) }), /out holds fewer/);
  await t.rejects(openSealedBatch(key, { ...good, dimension: 0 }), /dimension/);
  // The addon checks again for a caller that skipped these checks.
  const addon = (await import('../../../src/native')).native as unknown as { openSealedTemplates: (...args: unknown[]) => Promise<unknown> };
  t.throws(() => addon.openSealedTemplates(new Uint8Array(31), sealed, good.sealedOffsets, aad, good.aadOffsets, good.out, DIM), /key is not 32 bytes/);
  t.throws(() => addon.openSealedTemplates(key.export(), sealed, good.sealedOffsets, aad, good.aadOffsets, new Float32Array(1), DIM), /out holds fewer/);
  await t.rejects(addon.openSealedTemplates(key.export(), sealed, Uint32Array.of(0, sealed.length + 9), aad, good.aadOffsets, good.out, DIM), /out of bounds/);
});

t.test('openSealedBatch: the lowest failing row of a batch, whatever thread finds it', { skip: !availability.available && availability.reason }, async (t) => {
  const n = 4096;
  const plain = Array.from({ length: n }, () => template());
  const sealedRows = plain.map((p, i) => seal('acc', `p${i}`, p));
  const aads = plain.map((_, i) => Buffer.from(JSON.stringify([TEMPLATES_PLACE, 'acc', `p${i}`, MODEL])));
  const offsets = (parts: Buffer[]) => { const o = new Uint32Array(parts.length + 1); parts.forEach((p, i) => { o[i + 1] = o[i] + p.length; }); return o; };
  const batch = (rowsIn: Buffer[]) => ({
    sealed: Buffer.concat(rowsIn), sealedOffsets: offsets(rowsIn), aad: Buffer.concat(aads), aadOffsets: offsets(aads),
    out: new Float32Array(n * DIM), dimension: DIM,
  });
  for (const threads of [1, 2, 4]) {
    const whole = batch(sealedRows);
    t.equal((await openSealedBatch(key, whole, threads)).failedRow, -1, `${threads} threads: every row opens`);
    t.same(Buffer.from(whole.out.buffer), Buffer.concat(plain), `${threads} threads: row i at i × dimension`);
    // Bad rows in runs far apart (each thread takes 64 rows at a time): the lowest is reported.
    const damaged = sealedRows.map((r, i) => (i === 3000 || i === 130 || i === 4095 ? Buffer.from(r).fill(7, 20, 30) : r));
    const got = await openSealedBatch(key, batch(damaged), threads);
    t.same(got, { failedRow: 130, reason: 'tag', bytes: 0, version: 0 }, `${threads} threads: row 130 named`);
  }
});

t.test('loadSealed: the lowest row that does not open, whatever thread meets it, and nothing loaded', { skip: !availability.available && availability.reason }, async (t) => {
  const n = 4 * 4096;  // four threads' worth of rows for the bulk load
  const plain = Array.from({ length: n }, () => template());
  const ids = plain.map((_, i) => `p${i}`);
  const sealedRows = plain.map((p, i) => seal('acc', ids[i], p));
  const aadOf = (id: string) => Buffer.from(JSON.stringify([TEMPLATES_PLACE, 'acc', id, MODEL]));
  const offsets = (parts: Buffer[]) => { const o = new Uint32Array(parts.length + 1); parts.forEach((p, i) => { o[i + 1] = o[i] + p.length; }); return o; };
  const batch = (rowsIn: Buffer[], keys = ids) => {
    const aads = keys.map(aadOf);
    return { keys, sealed: Buffer.concat(rowsIn), sealedOffsets: offsets(rowsIn), aad: Buffer.concat(aads), aadOffsets: offsets(aads) };
  };
  const raw = key.export();
  const reference = newCollection();
  await reference.bulkLoad(new Float32Array(Buffer.concat(plain).buffer.slice(0)), ids);
  const expected = await indexRows(new Map([['acc', reference]]));
  for (const threads of [1, 2, 4]) {
    for (const vectors of [true, false]) {
      const c = similarityIndex().createCollection(`native-unseal-${process.pid}-${collections++}`, DIM, { vectors });
      t.teardown(() => { similarityIndex().dropCollection(c.name); });
      await c.add('already', new Float32Array(plain[0].buffer, plain[0].byteOffset, DIM));
      const damaged = sealedRows.map((r, i) => (i === 12000 || i === 130 || i === n - 1 ? Buffer.from(r).fill(7, 20, 30) : r));
      t.same(await c.loadSealed(batch(damaged), raw, { threads }), { added: 0, replaced: 0, failedRow: 130, reason: 'tag', bytes: 0, version: 0 },
        `${threads} threads, vectors ${vectors}: row 130 named`);
      t.equal(c.size, 1, 'nothing loaded');
      const got = await c.loadSealed(batch(sealedRows), raw, { threads });
      t.same(got, { added: n, replaced: 0, failedRow: -1, reason: '', bytes: 0, version: 0 }, 'a whole batch loads');
      if (vectors) {
        const rowsIn = await indexRows(new Map([['acc', c]]));
        rowsIn.delete('acc/already');
        t.same(rowsIn, expected, 'the rows bulkLoad makes of the unsealed templates');
      }
    }
  }
  const c = newCollection();
  // A key repeated later keeps the later row, but the earlier one must still open (as openSealedBatch checks every row).
  const repeated = ids.slice(0, 10).map((id, i) => (i === 9 ? ids[2] : id));
  const two = sealedRows.slice(0, 10).map((r, i) => (i === 2 ? r.subarray(0, 5) : r));
  t.same(await c.loadSealed(batch(two, repeated), raw), { added: 0, replaced: 0, failedRow: 2, reason: 'short', bytes: 5, version: 0 }, 'a superseded row is judged too');
  const nan = seal('acc', ids[0], Buffer.from(Float32Array.from({ length: DIM }, (_, i) => (i === 3 ? NaN : 0.1)).buffer));
  await t.rejects(c.loadSealed(batch([nan], ids.slice(0, 1)), raw), { code: 'ERR_INDEX_BAD_ARGUMENT', message: /NaN/ }, 'a template that opens but is no template: the index error');
  t.equal(c.size, 0, 'nothing loaded');
  const wide = newCollection(DIM + 1);
  t.same(await wide.loadSealed(batch(sealedRows.slice(0, 1), ids.slice(0, 1)), raw), { added: 0, replaced: 0, failedRow: 0, reason: 'size', bytes: DIM * 4, version: 0 },
    'a collection of another dimension: the plain size is no row of it');
  t.throws(() => c.loadSealed(batch(sealedRows), raw.subarray(0, 31)), /32 bytes/);
  t.throws(() => c.loadSealed({ ...batch(sealedRows), sealedOffsets: Uint32Array.of(0, 1e9) }, raw), /rows \+ 1 offsets/);
  const one = batch(sealedRows.slice(0, 1), ids.slice(0, 1));
  t.throws(() => c.loadSealed({ ...one, aadOffsets: Uint32Array.of(0, one.aad.length + 1) }, raw), /end past their buffer/);
  // The addon checks again for a caller that skipped these checks.
  const addon = (await import('../../../src/native')).native as unknown as { index: { loadSealedTemplates: (...args: unknown[]) => Promise<unknown> } };
  await t.rejects(addon.index.loadSealedTemplates(c.name, raw, one.sealed, Uint32Array.of(0, one.sealed.length + 9), one.aad, one.aadOffsets, 'p0', 0),
    { code: 'ERR_INDEX_BAD_ARGUMENT', message: /out of bounds/ });
  t.throws(() => addon.index.loadSealedTemplates(c.name, raw, one.sealed, one.sealedOffsets, one.aad, one.aadOffsets, 'p0\0p1', 0), /keys and offsets differ/);
});

const skip = postgresSkipReason();
if (skip) t.test('copyTemplates over a server', async (t) => { t.plan(0, skip); });
else void t.test('copyTemplates over a server, native and JavaScript', { skip: !availability.available && availability.reason }, overServer);

async function overServer(t: Test): Promise<void> {
  const model = templateModelId();
  const dim = templateSize();
  const { pg, keyFile } = await postgresCluster(t);
  const store = await openPostgresStore(postgresSettings(await pg.createDatabase('native_unseal'), { poolSize: 4 }), { keyFile });
  t.teardown(() => store.close());
  const now = new Date().toISOString();
  const sizes: Record<string, number> = { 'big "ü"': 4500, small: 5 };
  for (const [accountId, n] of Object.entries(sizes)) {
    for (let from = 0; from < n; from += 1000) {
      await store.persons.createMany(accountId, Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({
        personId: `p"${from + i}`, modelId: model, referenceImage: Buffer.from('x'),
        template: Float32Array.from({ length: dim }, () => Math.random() - 0.5),
      })), now);
    }
  }
  const persons = store.persons as PgPersonRepository;
  const collect = async (unsealer: 'native' | 'js') => {
    const got = new Map<string, string>();
    const count = await persons.copyTemplates(model, (rows) => {
      rows.ids.forEach((id, i) => got.set(`${rows.accountId}/${id}`,
        Buffer.from(rows.data.buffer, rows.data.byteOffset + i * rows.dimension * 4, rows.dimension * 4).toString('base64')));
      rows.release();
    }, { unsealer });
    return { count, got };
  };

  await t.test('the same templates as the repository opens one by one', async (t) => {
    const expected = new Map<string, string>();
    for (const [accountId, n] of Object.entries(sizes)) {
      const ids = Array.from({ length: n }, (_, i) => `p"${i}`);
      const templates = await persons.templatesOf(accountId, ids);
      ids.forEach((id, i) => expected.set(`${accountId}/${id}`, Buffer.from(templates[i]!.buffer, templates[i]!.byteOffset, templates[i]!.byteLength).toString('base64')));
    }
    for (const unsealer of ['native', 'js'] as const) {
      const { count, got } = await collect(unsealer);
      t.equal(count, 4505, `${unsealer}: every person counted`);
      t.same(got, expected, `${unsealer}: identical templates`);
    }
  });

  await t.test('a value that does not open: the same SealError from both', async (t) => {
    await store.pool.query(`UPDATE persons SET sealed_template = set_byte(sealed_template, 40, (get_byte(sealed_template, 40) + 1) % 256)
      WHERE account_id = 'big "ü"' AND person_id = 'p"1234'`);
    const messages: string[] = [];
    for (const unsealer of ['native', 'js'] as const) {
      const err = await collect(unsealer).then(() => undefined, (e: unknown) => e);
      t.type(err, SealError, `${unsealer}: a SealError`);
      messages.push((err as Error).message);
    }
    t.match(messages[0], /does not open/);
    t.equal(messages[0], messages[1], 'the same message');
  });
}
