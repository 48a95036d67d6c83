// lmdb-js is loaded with the C library named by the addon (src/storage/lmdb/load.ts): its binaries are found
// without detect-libc's probe, so a start does not load child_process (and net, dgram) for it; LIBC is not
// left in the environment; a LIBC set by the caller is kept and used. Each case runs in a fresh process of
// the compiled program, whose module cache is its own.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';

import { addonLibc } from '../../src/storage/native-storage';
import { repoRoot } from '../helpers/errors';

function inFreshNode(script: string, env: NodeJS.ProcessEnv = {}): Record<string, unknown> {
  // A bare environment: the test runner's variables make a child load child_process before its first line.
  const r = spawnSync(process.execPath, ['-e', script], { cwd: repoRoot, encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  if (r.status !== 0) throw new Error(`node exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

const dist = (file: string) => JSON.stringify(path.join(repoRoot, 'dist', 'src', file));
const probe = `
  const before = new Set(process.moduleLoadList);
  const { openStore } = require(${dist('storage/lmdb/store.js')});
  const dir = require('node:fs').mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'face-check-lmdb-load-'));
  const loadedBeforeOpen = process.moduleLoadList.filter((m) => !before.has(m) && /NativeModule (child_process|dgram|net)$/.test(m));
  openStore(dir).then(async (store) => {
    await store.persons.createMany('acc', [], '2024-01-01T00:00:00.000Z');
    await store.close();
    require('node:fs').rmSync(dir, { recursive: true, force: true });
    console.log(JSON.stringify({ loadedBeforeOpen, libc: process.env.LIBC ?? null, opened: true }));
  });`;

t.test('on glibc, the store opens without detect-libc\'s child_process, and LIBC is not left behind', { skip: process.platform !== 'linux' || addonLibc() !== 'glibc' ? 'not a glibc build on Linux' : false }, async (t) => {
  const got = inFreshNode(probe);
  t.same(got, { loadedBeforeOpen: [], libc: null, opened: true });
});

t.test('a LIBC the caller set is kept (and the probe skipped, as the packages do themselves)', async (t) => {
  const got = inFreshNode(probe, { LIBC: 'glibc' });
  t.same(got, { loadedBeforeOpen: [], libc: 'glibc', opened: true });
});

t.test('the probe is what loaded child_process before: lmdb alone, as a caller without the addon would load it', async (t) => {
  const got = inFreshNode(`require('lmdb'); console.log(JSON.stringify({ child: process.moduleLoadList.includes('NativeModule child_process') }));`);
  t.same(got, { child: process.platform === 'linux' });
});
