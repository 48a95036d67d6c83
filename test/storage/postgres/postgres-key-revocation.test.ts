// API key lookups answered from a node's memory for KEY_LOOKUP_CACHE_MS (src/storage/postgres/api-keys.ts):
// a key revoked on node A is refused on A at once and on node B, which had just used it, once that bound has
// passed; a key made on A works on B at once, and a key B never saw is read, not guessed.
import path from 'node:path';
import t from 'tap';
import { Authenticator } from '../../../src/services/auth';
import { KEY_LOOKUP_CACHE_MS } from '../../../src/storage/postgres/api-keys';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore } from '../../../src/storage/postgres/store';
import { testErrorCatalog } from '../../helpers/errors';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('keys');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 2 }), { keyFile: path.join(dir, 'k') });
  const [a, b] = [await open(), await open()];
  t.teardown(async () => { await a.close(); await b.close(); });
  const errors = testErrorCatalog();
  const onA = new Authenticator(a.apiKeys, errors, '');
  const onB = new Authenticator(b.apiKeys, errors, '');
  const status = (auth: Authenticator, key: string) =>
    auth.authenticate(key, 'person:match').then(() => 200, (err: { statusCode?: number }) => err.statusCode ?? 500);

  t.test('a key made on A works on B at once; an unknown key is refused', async (t) => {
    t.equal(await status(onB, 'no-such-key'), 401);
    const { key } = await a.apiKeys.create('acme', 'full', 'made on A', new Date().toISOString());
    t.equal(await status(onB, key), 200);
  });

  t.test(`a revoked key is refused at once by the revoking node and by the other within ${KEY_LOOKUP_CACHE_MS} ms`, async (t) => {
    const { key, record } = await a.apiKeys.create('acme', 'full', 'to revoke', new Date().toISOString());
    t.equal(await status(onA, key), 200);
    t.equal(await status(onB, key), 200, 'B holds it now');
    t.equal(await b.apiKeys.revoke(record.keyId, new Date().toISOString()), true);
    t.equal(await status(onB, key), 403, 'the revoking node refuses at once');
    t.equal(await a.apiKeys.revoke(record.keyId, new Date().toISOString()), true);
    t.equal(await status(onA, key), 403);
    const other = await a.apiKeys.create('acme', 'full', 'revoked elsewhere', new Date().toISOString());
    t.equal(await status(onB, other.key), 200, 'B holds it now');
    t.equal(await a.apiKeys.revoke(other.record.keyId, new Date().toISOString()), true);
    await sleep(KEY_LOOKUP_CACHE_MS);
    t.equal(await status(onB, other.key), 403, 'B refuses once the bound has passed');
  });
}
