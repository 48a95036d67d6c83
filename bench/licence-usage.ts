// What counting a licensed device's answered requests on disk costs each answer (src/licensing/device/licence-usage.ts):
// the answer waits for its count's LMDB commit. Side by side, interleaved in rounds: a count kept only in
// memory (as before the counts were written), one awaited count at a time (a device answering requests one
// after another: one commit each), and 16 counted in the same turn (concurrent answers sharing one commit).
// Ends with one JSON line.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LicenceUsage } from '../src/licensing/device/licence-usage';
import { openStore } from '../src/storage/lmdb/store';

const ROUNDS = 5;
const SEQUENTIAL = 400;
const BATCHES = 100;
const CONCURRENT = 16;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-bench-usage-'));
  const store = await openStore(path.join(dir, 'db'));
  try {
    const usage = new LicenceUsage(store.deviceUsage, () => undefined);
    const memory = new Map<string, number>();
    const times = { memory: [] as number[], sequential: [] as number[], concurrent: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < SEQUENTIAL; i++) {
        const t0 = performance.now();
        const key = `${new Date().toISOString().slice(0, 10)} get`;
        memory.set(key, (memory.get(key) ?? 0) + 1);
        times.memory.push(performance.now() - t0);
      }
      for (let i = 0; i < SEQUENTIAL; i++) {
        const t0 = performance.now();
        await usage.record('get', new Date());
        times.sequential.push(performance.now() - t0);
      }
      for (let i = 0; i < BATCHES; i++) {
        const t0 = performance.now();
        await Promise.all(Array.from({ length: CONCURRENT }, () => usage.record('identify', new Date())));
        times.concurrent.push(performance.now() - t0);
      }
    }
    const counted = store.deviceUsage.pendingRows().reduce((n, r) => n + r.requests, 0);
    const summary = Object.fromEntries(Object.entries(times).map(([name, list]) => {
      const sorted = [...list].sort((a, b) => a - b);
      return [name, { n: list.length, p50Ms: +percentile(sorted, 50).toFixed(4), p99Ms: +percentile(sorted, 99).toFixed(4) }];
    }));
    const expected = ROUNDS * (SEQUENTIAL + BATCHES * CONCURRENT);
    console.log('memory: a Map increment; sequential: one awaited count (its own commit); concurrent: 16 counts of one turn (one commit), per batch');
    for (const [name, s] of Object.entries(summary)) console.log(`${name.padEnd(11)} n=${s.n} p50 ${s.p50Ms} ms  p99 ${s.p99Ms} ms`);
    console.log(`counted on disk: ${counted} of ${expected}`);
    console.log(JSON.stringify({ bench: 'licence-usage', ...summary, countedOnDisk: counted, expected }));
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
