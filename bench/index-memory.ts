// Resident memory per template of a gallery, measured in a process of its own (bench:index runs it as a
// child): in the benchmark process the garbage of gigabytes of generated and sealed data is freed at
// unpredictable times and hides or inflates the index's growth. Loads n random templates block by block
// (16k per bulk load, as the start-up rebuild does) into an IndexGallery with or without float32 in the
// index, and prints one JSON line: stats and RSS growth per template.
// Usage: node dist/bench/index-memory.js <persons> <dim> rows|vectors
import { IndexGallery } from '../src/matching/index-gallery';
import { similarityIndex } from '../src/similarity-index/similarity-index';
import { collectGarbage } from './index-rows';

const BLOCK = 16384;

async function settledRss(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    collectGarbage();
    await new Promise((r) => setTimeout(r, 100));
  }
  return process.memoryUsage().rss;
}

async function main(): Promise<void> {
  const persons = Number(process.argv[2]);
  const dim = Number(process.argv[3]);
  const rowsOnly = process.argv[4] === 'rows';
  const block = new Float32Array(BLOCK * dim);
  let s = 12345;
  for (let i = 0; i < block.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    block[i] = s / 4294967296 - 0.5;
  }
  const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => `person-${String(from + i).padStart(8, '0')}`);
  const make = (name: string) => (rowsOnly ? new IndexGallery(name, () => []) : new IndexGallery(name));
  // A throwaway gallery first, so that the code paths are set up before the baseline.
  const warm = make(`memory-warm-${process.pid}`);
  await warm.load(ids(0, 1), block.subarray(0, dim), dim, { clear: true });
  warm.drop();
  const name = `memory-${process.pid}`;
  const gallery = make(name);
  const before = await settledRss();
  for (let at = 0; at < persons; at += BLOCK) {
    const count = Math.min(BLOCK, persons - at);
    await gallery.load(ids(at, count), block.subarray(0, count * dim), dim, { clear: at === 0 });
  }
  const after = await settledRss();
  const st = similarityIndex().collection(name)!.stats();
  console.log(JSON.stringify({
    persons, dim, rowsOnly,
    statsPerTemplate: (st.bytesAllocated + st.bytesKeys) / persons,
    keysPerTemplate: st.bytesKeys / persons,
    rssPerTemplate: (after - before) / persons,
  }));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
