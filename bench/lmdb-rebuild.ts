// Child process of bench:index (bench/index.ts): one start-up gallery rebuild from LMDB in a fresh process,
// as at a service start. Prints one JSON line {seconds, loaded}.
//   node dist/bench/lmdb-rebuild.js segments <storeDir> <modelId>     the service's own path: openStore + Galleries.rebuild
//   node dist/bench/lmdb-rebuild.js per-person <envDir> <accountId>   the replaced layout: one raw float32 value per person
import { open as openLmdb } from 'lmdb';

import { similarityIndex } from '../src/index/similarity-index';
import { Galleries } from '../src/matching/galleries';
import { templateSize } from '../src/engine/template-spec';
import { openStore } from '../src/storage/store';
import { entriesWithPrefix } from '../src/storage/key-prefix';

// The engine's template size unless INDEX_BENCH_DIM says otherwise (bench:index passes it on to this child).
const DIM = Number(process.env.INDEX_BENCH_DIM ?? templateSize());
const BLOCK = 65536;

async function segments(dir: string, modelId: string): Promise<number> {
  const store = await openStore(dir);
  const galleries = new Galleries();
  const { loaded } = await galleries.rebuild(store.persons, modelId);
  return loaded;
}

/** The same double-buffered 64k-template bulk loads, fed from one LMDB value per person. */
async function perPerson(dir: string, account: string): Promise<number> {
  const c = similarityIndex().createCollection('bench-per-person', DIM);
  const root = openLmdb({ path: dir, readOnly: true, compression: false });
  const db = root.openDB<Uint8Array, [string, string]>({ name: 'templates', encoding: 'binary' });
  const bufs = [new Float32Array(BLOCK * DIM), new Float32Array(BLOCK * DIM)];
  let which = 0;
  let pending: Promise<unknown> | undefined;
  let bytes = new Uint8Array(bufs[0].buffer);
  let keys: string[] = [];
  const flush = async () => {
    const data = bufs[which].subarray(0, keys.length * DIM);
    await pending;
    pending = c.bulkLoad(data, keys);
    which ^= 1;
    bytes = new Uint8Array(bufs[which].buffer);
    keys = [];
  };
  for (const { key, value } of entriesWithPrefix(db, [account])) {
    bytes.set(value, keys.length * DIM * 4);
    keys.push(key[1]);
    if (keys.length === BLOCK) await flush();
  }
  if (keys.length) await flush();
  await pending;
  return c.size;
}

async function main(): Promise<void> {
  const [mode, dir, name] = process.argv.slice(2);
  const t0 = performance.now();
  const loaded = mode === 'segments' ? await segments(dir, name) : await perPerson(dir, name);
  console.log(JSON.stringify({ mode, seconds: (performance.now() - t0) / 1000, loaded }));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
