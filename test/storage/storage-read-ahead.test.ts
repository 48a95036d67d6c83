// Files read ahead into the page cache (src/storage/read-ahead.ts, native/core/io/file_read_ahead.cpp): the
// kernel is asked for whole files in order, up to a byte budget, skipping what cannot be opened; stop()
// ends it early; the snapshot read-ahead of a store's folder (src/matching/snapshot/read-ahead.ts) brings its
// files into the cache. Residency is read with util-linux's fincore, after the file was dropped from the page
// cache (posix_fadvise DONTNEED through dd, as the benchmarks do); on a file system without a page cache to
// drop from (tmpfs), the residency checks skip, saying so.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { SNAPSHOT_FOLDER } from '../../src/matching/snapshot/place';
import { startSnapshotReadAhead, stopSnapshotReadAhead } from '../../src/matching/snapshot/read-ahead';
import { readFilesAhead } from '../../src/storage/read-ahead';
import { tempDir } from '../helpers/app';

const MiB = 1 << 20;
const hasFincore = (() => {
  try {
    execFileSync('fincore', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function writeRandom(file: string, bytes: number): void {
  const fd = fs.openSync(file, 'w');
  for (let at = 0; at < bytes; at += 4 * MiB) fs.writeSync(fd, crypto.randomBytes(Math.min(4 * MiB, bytes - at)));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

/** Drops the file from the page cache; whether it worked (not on tmpfs). */
function dropped(file: string): boolean {
  execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  return resident(file) < fs.statSync(file).size / 4;
}

function resident(file: string): number {
  return Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim());
}

/** Waits (up to 5 s: the kernel reads after the request returned) until most of the file is cached. */
async function cachedSoon(file: string): Promise<number> {
  const size = fs.statSync(file).size;
  for (let i = 0; i < 100 && resident(file) < 0.9 * size; i++) await new Promise((r) => setTimeout(r, 50));
  return resident(file) / size;
}

t.test('files asked for in order, up to the budget, what cannot be opened skipped', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const a = path.join(dir, 'a.bin'), b = path.join(dir, 'b.bin');
  writeRandom(a, 6 * MiB + 123);
  writeRandom(b, 3 * MiB);

  const all = readFilesAhead([path.join(dir, 'missing.bin'), a, dir, b], Number.MAX_SAFE_INTEGER);
  t.ok(all, 'the addon reads ahead');
  t.same(await all!.done, { requested: 9 * MiB + 123, files: 2 }, 'both files whole; the missing file and the folder skipped');
  t.same(await readFilesAhead([a, b], 5 * MiB)!.done, { requested: 5 * MiB, files: 1 }, 'stops at the budget, in order');
  t.same(await readFilesAhead([a], 0)!.done, { requested: 0, files: 0 }, 'a budget of 0 asks for nothing');
  t.equal(readFilesAhead([], 1), undefined, 'nothing to read');
  t.throws(() => readFilesAhead([a], -1), /maxBytes must be 0 or more/);
});

t.test('the kernel reads the file; stop() ends it early', { skip: !hasFincore && 'no fincore (apt-get install util-linux-extra)' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'big.bin');
  writeRandom(file, 48 * MiB);
  if (!dropped(file)) {
    t.skip(`${dir} keeps its files cached whatever is asked (tmpfs?)`, () => undefined);
    return;
  }
  const stopped = readFilesAhead([file], Number.MAX_SAFE_INTEGER)!;
  stopped.stop();
  const early = await stopped.done;
  t.ok(early.requested < 48 * MiB, `stopped after ${early.requested / MiB} MiB of 48`);

  t.ok(dropped(file));
  const whole = await readFilesAhead([file], Number.MAX_SAFE_INTEGER)!.done;
  t.equal(whole.requested, 48 * MiB);
  t.ok(await cachedSoon(file) >= 0.9, 'the file is in the page cache');
});

t.test("a store's snapshot files read ahead from its folder", { skip: !hasFincore && 'no fincore (apt-get install util-linux-extra)' }, async (t) => {
  const dir = tempDir();
  t.teardown(() => { stopSnapshotReadAhead(); fs.rmSync(dir, { recursive: true, force: true }); });
  startSnapshotReadAhead(path.join(dir, 'no-store-here'));  // no folder: nothing, no error
  fs.mkdirSync(path.join(dir, SNAPSHOT_FOLDER));
  const snap = path.join(dir, SNAPSHOT_FOLDER, 'a.snap'), other = path.join(dir, SNAPSHOT_FOLDER, 'notes.txt');
  writeRandom(snap, 12 * MiB);
  writeRandom(other, 2 * MiB);
  if (!dropped(snap) || !dropped(other)) {
    t.skip(`${dir} keeps its files cached whatever is asked (tmpfs?)`, () => undefined);
    return;
  }
  startSnapshotReadAhead(dir);
  t.ok(await cachedSoon(snap) >= 0.9, 'the snapshot file is in the page cache');
  t.ok(resident(other) < MiB, 'a file that is not a snapshot is left alone');
});
