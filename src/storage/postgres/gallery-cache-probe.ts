// Opens a gallery cache (./gallery-cache.ts) in a child process before the node opens it: LMDB trusts its
// file, and a damaged one (a truncated copy, pages overwritten) crashes the process that reads it with a
// segmentation fault rather than an error. The child opens the environment read-only and walks every key (the
// B-tree's pages, not the rows' values: a damaged row fails its tag when opened, which the start handles);
// a child that does not exit cleanly means the cache is removed and made anew from the table.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const PROBE = `
const { open } = require(process.argv[1]);
const env = open({ path: process.argv[2], readOnly: true, maxDbs: 4, compression: false });
env.openDB({ name: 'meta' }).get('state');
let n = 0;
for (const key of env.openDB({ name: 'rows', encoding: 'binary' }).getKeys()) n++;
process.exit(n >= 0 ? 0 : 1);
`;

/** Whether the cache in `dir` opens and its keys read in a child process (true when there is no cache yet). */
export function galleryCacheReadable(dir: string, timeoutMs = 120_000): boolean {
  if (!fs.existsSync(path.join(dir, 'data.mdb'))) return true;
  const probe = spawnSync(process.execPath, ['-e', PROBE, require.resolve('lmdb'), dir], { stdio: 'ignore', timeout: timeoutMs });
  return probe.status === 0;
}
