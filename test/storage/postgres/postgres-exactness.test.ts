// Rules that must hold exactly when two nodes (two stores, each with its own pool) serve one database at once:
// a daily quota of N admits exactly N; a signature accepted by one node is a replay on the other, and of many
// claims of one signature one wins; of concurrent creates of one person id one succeeds; a check-then-insert
// rule holds under the account lock (and is shown to break without it), whose fence names the other node's
// last change; the sign-in throttle admits max_failures attempts in all; an activation code is redeemed once,
// a licence limit and a unique address hold, and both nodes get one response-signing key.
import crypto from 'node:crypto';
import path from 'node:path';
import t from 'tap';
import { changesAfter } from '../../../src/storage/postgres/change-log';
import { postgresSettings } from '../../../src/storage/postgres/pool';
import { openPostgresStore, type PostgresStore } from '../../../src/storage/postgres/store';
import { postgresSkipReason, postgresCluster } from '../../helpers/postgres';

const skip = postgresSkipReason();
if (skip) t.plan(0, skip);
else void run();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function input(i = 0) {
  return { modelId: 'm1', template: Float32Array.from({ length: 128 }, (_, k) => Math.sin(i + k)), referenceImage: Buffer.from([i]) };
}

/** `n` calls spread alternately over the two nodes, all started at once. */
function onBoth<T>(nodes: readonly PostgresStore[], n: number, call: (node: PostgresStore, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => call(nodes[i % nodes.length], i)));
}

async function run(): Promise<void> {
  const { pg, dir } = await postgresCluster(t);
  const url = await pg.createDatabase('exact');
  const open = () => openPostgresStore(postgresSettings(url, { poolSize: 8, statementTimeoutMs: 20_000 }), { keyFile: path.join(dir, 'k') });
  const nodes = await Promise.all([open(), open()]);
  t.teardown(() => Promise.all(nodes.map((n) => n.close())));
  const [a, b] = nodes;

  await t.test('both nodes starting on an empty database get one response-signing key', async (t) => {
    const [ka, kb] = await Promise.all([a.serviceKeys.responseSigning(), b.serviceKeys.responseSigning()]);
    t.equal(ka.publicKey, kb.publicKey);
    t.equal(ka.privateKey, kb.privateKey);
  });

  await t.test('a quota of 50 a day admits exactly 50 of 300 requests spread over two nodes', async (t) => {
    const answers = await onBoth(nodes, 300, (node) => node.quota.tryConsume('acme', '2024-05-01', 50));
    t.equal(answers.filter(Boolean).length, 50);
    t.equal(await b.quota.used('acme', '2024-05-01'), 50);
    t.equal(await a.quota.tryConsume('acme', '2024-05-01', 50), false, 'and none after');
  });

  await t.test('a signature accepted on one node is a replay on the other; of 40 claims at once one wins', async (t) => {
    const now = new Date('2024-05-01T10:00:00.000Z');
    const until = new Date(now.getTime() + 600_000);
    t.equal(await a.replayCache.claim('sig-1', now, until), true);
    t.equal(await b.replayCache.claim('sig-1', now, until), false, 'replayed to the other node');
    const answers = await onBoth(nodes, 40, (node) => node.replayCache.claim('sig-2', now, until));
    t.equal(answers.filter(Boolean).length, 1);
    const later = new Date(until.getTime() + 1);
    t.equal(await b.replayCache.claim('sig-1', later, new Date(later.getTime() + 600_000)), true,
      'an expired entry does not refuse (the timestamp window refuses such a request first)');
    // The claim just made may have pruned sig-2 already: a node's housekeeping runs in the background once a
    // minute of request time. Either way sig-2 is gone after this prune and the renewed sig-1 stays.
    const pruned = await a.replayCache.prune(new Date(later.getTime() + 1));
    t.ok(pruned === 0 || pruned === 1, `sig-2 expired and pruned (${pruned} by this call)`);
    t.same((await a.pool.query('SELECT count(*)::int AS n FROM request_signatures')).rows, [{ n: 1 }]);
  });

  await t.test('of 20 creates of one person id at once on two nodes, exactly one succeeds', async (t) => {
    const from = await a.changes.lastChange();
    const results = await onBoth(nodes, 20, (node, i) => node.persons.create('acme', 'same', input(i), new Date().toISOString()));
    t.equal(results.filter((r) => r.created).length, 1);
    t.equal(await a.persons.count('acme'), 1);
    t.same((await changesAfter(a.pool, from, 100)).map((c) => [c.op, c.personId]), [['create', 'same']], 'one change logged');
  });

  await t.test('check-then-insert: the account lock admits one of ten; without it several pass', async (t) => {
    // The rule: an account holds at most one person whose id starts with "only-" (as "this face is not
    // enrolled yet" is checked, then written). The pause widens the window between the check and the write.
    const attempt = async (node: PostgresStore, account: string, i: number, locked: boolean): Promise<boolean> => {
      const body = async (persons: PostgresStore['persons']) => {
        const held = [];
        for await (const p of node.persons.all()) if (p.accountId === account && p.personId.startsWith('only-')) held.push(p);
        if (held.length > 0) return false;
        await sleep(100);
        return (await persons.create(account, `only-${i}`, input(i), new Date().toISOString())).created;
      };
      return locked ? node.exclusive(account, (scope) => body(scope.persons)) : body(node.persons);
    };
    const unlocked = await onBoth(nodes, 10, (node, i) => attempt(node, 'race-free', i, false));
    t.ok(unlocked.filter(Boolean).length > 1, `without the lock ${unlocked.filter(Boolean).length} of 10 passed the check`);
    const locked = await onBoth(nodes, 10, (node, i) => attempt(node, 'race-locked', i, true));
    t.equal(locked.filter(Boolean).length, 1, 'with the lock exactly one');
    t.equal(await b.persons.count('race-locked'), 1);
  });

  await t.test('the fence names the last change the other node committed; a failed section writes nothing', async (t) => {
    let writtenByA = { seq: -1 };
    let noWrites: { seq: number } | undefined;
    await a.exclusive('fenced', async (scope) => {
      t.equal(scope.fence.seq, 0, 'no change of this account yet');
      writtenByA = scope.written;
      await scope.persons.create('fenced', 'p1', input(1), new Date().toISOString());
      t.equal(scope.written.seq, 0, 'not known before the commit');
    });
    // Another write after it: `written` stays A's own change, where the log's end has moved on.
    await b.persons.create('elsewhere', 'e1', input(9), new Date().toISOString());
    t.ok(await a.changes.lastChange() > writtenByA.seq, 'the log went on past it');
    const committed = (await changesAfter(a.pool, 0, 100_000)).filter((c) => c.accountId === 'fenced').map((c) => c.seq);
    t.equal(writtenByA.seq, committed[0], 'the section\'s `written` names its own change once committed');
    await b.exclusive('fenced', async (scope) => {
      t.equal(scope.fence.seq, committed[0], 'B sees A\'s change in its fence');
      noWrites = scope.written;
    });
    t.equal(noWrites?.seq, 0, 'a section that wrote nothing: written 0');
    await t.rejects(b.exclusive('fenced', async (scope) => {
      await scope.persons.create('fenced', 'p2', input(2), new Date().toISOString());
      throw new Error('the duplicate check refused after the write');
    }), /refused/);
    t.equal(await a.persons.meta('fenced', 'p2'), undefined, 'rolled back with the section');
    t.equal((await changesAfter(a.pool, committed[0], 100_000)).filter((c) => c.accountId === 'fenced').length, 0, 'and not logged');
  });

  await t.test('the sign-in throttle admits 5 of 30 attempts at once over two nodes', async (t) => {
    let clock = Date.parse('2024-05-01T10:00:00.000Z');
    const options = { maxFailures: 5, windowMs: 60_000, now: () => clock };
    const throttles = [a.signInThrottle(options), b.signInThrottle(options)];
    const keys = ['account:eve@example.com', 'address:10.0.0.9'];
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => throttles[i % 2].tryBegin(keys)));
    const begun = outcomes.filter((o) => 'attempt' in o);
    t.equal(begun.length, 5);
    t.ok(outcomes.every((o) => 'attempt' in o || (o.retryAfterSeconds > 0 && o.retryAfterSeconds <= 60)), 'the others told to wait');
    t.equal(await throttles[1].retryAfterSeconds(['address:10.0.0.9']), 60);
    clock += 30_000;
    t.equal(await throttles[0].retryAfterSeconds(keys), 30, 'until the oldest of the five leaves the window');
    const one = begun[0] as { attempt: Parameters<(typeof throttles)[0]['succeeded']>[0] };
    await throttles[1].succeeded(one.attempt, 'account:eve@example.com');
    t.equal(await throttles[0].retryAfterSeconds(['account:eve@example.com']), 0, 'the account\'s count ends on success');
    t.equal(await throttles[0].retryAfterSeconds(['address:10.0.0.9']), 0, 'the right attempt is taken back from the address');
    clock += 30_001;
    t.equal(await throttles[0].retryAfterSeconds(keys), 0, 'the window has passed');
  });

  await t.test('an activation code is redeemed once of ten tries on two nodes; a licence limit of 3 holds', async (t) => {
    await a.activationCodes.add('code-1', { codeId: 'code0001', plan: 'free', created: new Date().toISOString(),
      expires: '2099-01-01T00:00:00.000Z', used: null });
    const licence = (account: string) => ({ accountId: account, label: 'x', grants: [], limits: { maxPersons: null }, expires: null });
    const redeemed = await onBoth(nodes, 10, (node, i) => node.licences.create(licence(`buyer-${i}`),
      { now: new Date(), maxLicences: 0, activationCode: { sha256: 'code-1', plan: 'free' } }));
    t.equal(redeemed.filter((r) => r.outcome === 'created').length, 1);
    t.ok(redeemed.every((r) => r.outcome === 'created' || (r.outcome === 'code-refused' && r.check.outcome === 'used')));
    const limited = await onBoth(nodes, 12, (node) => node.licences.create(licence('limited'), { now: new Date(), maxLicences: 3 }));
    t.equal(limited.filter((r) => r.outcome === 'created').length, 3);
    t.equal((await b.licences.listByAccount('limited')).length, 3);
  });

  await t.test('of ten registrations with one address at once, one is created', async (t) => {
    const email = `${crypto.randomBytes(4).toString('hex')}@example.com`;
    const answers = await onBoth(nodes, 10, (node, i) => node.accounts.create({ accountId: `acc-${i}`, email, passwordHash: 'h',
      role: 'operator', plan: 'free', created: new Date().toISOString(), updated: new Date().toISOString() }));
    t.equal(answers.filter((x) => x === 'created').length, 1);
    t.equal(answers.filter((x) => x === 'email-taken').length, 9);
  });
}
