// The environment the benchmarks start the program with when they time its start: node's own start-up
// variables that the service unit does not set are dropped, everything else is kept, and BENCH_SHELL_ENV=1
// keeps the shell's environment as it is.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { droppedStartVariables, serviceProcessEnv } from '../../bench/service-env';

const shell = { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt', FACE_CHECK_CACHE: '/tmp/x', NODE_OPTIONS: '--max-old-space-size=512' };

t.test('node start-up variables the unit does not set are dropped, the rest kept', async (t) => {
  const env = serviceProcessEnv(shell);
  t.equal(env.NODE_EXTRA_CA_CERTS, undefined);
  t.equal(env.FACE_CHECK_CACHE, '/tmp/x');
  t.equal(env.NODE_OPTIONS, '--max-old-space-size=512', 'what the caller sets on purpose stays');
  t.same(droppedStartVariables(shell), ['NODE_EXTRA_CA_CERTS']);
  t.equal(shell.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt', 'the given environment is not changed');
  const seen = spawnSync(process.execPath, ['-p', 'JSON.stringify([process.env.NODE_EXTRA_CA_CERTS ?? null, process.env.FACE_CHECK_CACHE])'],
    { env, encoding: 'utf8' }).stdout.trim();
  t.same(JSON.parse(seen), [null, '/tmp/x'], 'a child started with it sees the same');
});

t.test('BENCH_SHELL_ENV=1 keeps the environment as it is', async (t) => {
  const env = serviceProcessEnv({ ...shell, BENCH_SHELL_ENV: '1' });
  t.equal(env.NODE_EXTRA_CA_CERTS, shell.NODE_EXTRA_CA_CERTS);
  t.same(droppedStartVariables({ ...shell, BENCH_SHELL_ENV: '1' }), []);
});
