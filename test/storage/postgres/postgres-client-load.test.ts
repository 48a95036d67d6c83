// The PostgreSQL client is loaded only where a store is PostgreSQL's, and without Node's fetch
// implementation (src/storage/postgres/pg-module.ts): each case runs in a fresh process of the compiled
// program, whose module cache is its own.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { repoRoot } from '../../helpers/errors';

function inFreshNode(script: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['-e', script], { cwd: repoRoot, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`node exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

const dist = (file: string) => JSON.stringify(path.join(repoRoot, 'dist', 'src', file));
const pgLoaded = "Object.keys(require.cache).some((f) => f.includes('/node_modules/pg/'))";
const fetchLoaded = "process.moduleLoadList.some((m) => m.includes('undici'))";

t.test('the whole program loads without the PostgreSQL client (an LMDB start never needs it)', async (t) => {
  const got = inFreshNode(`
    require(${dist('cli/main.js')}); require(${dist('start/start-service.js')}); require(${dist('http/app.js')});
    console.log(JSON.stringify({ pg: ${pgLoaded} }));`);
  t.equal(got.pg, false);
});

t.test('the client loads on first use, once, without the fetch implementation, and leaves no navigator behind', async (t) => {
  const got = inFreshNode(`
    const before = globalThis.navigator;
    const { pg } = require(${dist('storage/postgres/pg-module.js')});
    const unloaded = ${pgLoaded};
    const first = pg();
    console.log(JSON.stringify({
      unloaded, pool: typeof first.Pool, client: typeof first.Client, same: pg() === first && first === require('pg'),
      navigatorKept: globalThis.navigator === before, nodeMajor: Number(process.versions.node.split('.')[0]), fetch: ${fetchLoaded},
    }));`);
  t.equal(got.unloaded, false, 'requiring the loader does not load pg');
  t.equal(got.pool, 'function');
  t.equal(got.client, 'function');
  t.equal(got.same, true, 'one module, the one require gives');
  t.equal(got.navigatorKept, true, 'globalThis.navigator is as it was');
  // Node 21 and later define navigator themselves; before, pg would have asked new Response(...).
  if ((got.nodeMajor as number) < 21) t.equal(got.fetch, false, "Node's fetch implementation was not loaded");
});
