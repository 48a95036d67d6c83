// [server] trust_proxy: behind a named reverse proxy the client address is the one it forwards, so sign-in
// throttling per address locks out one client, not everyone behind the proxy; without it the TCP peer counts
// and X-Forwarded-For is ignored (a client cannot pick its own address). Bad values stop start-up.
import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config/load';
import { startTestApp, type TestApp } from '../helpers/app';

async function cloud(t: Test, trustProxy: string): Promise<TestApp> {
  const a = await startTestApp({
    tune: (c) => { c.server.mode = 'cloud'; c.server.trust_proxy = trustProxy; c.accounts.sign_in_address_max_failures = 5; },
  });
  t.teardown(() => a.close());
  return a;
}

/** A wrong sign-in from the proxy at 127.0.0.1 on behalf of `client`. */
function wrongSignIn(a: TestApp, client: string, n: number) {
  return a.call({
    method: 'POST', url: '/account/v1/sessions', key: null, remoteAddress: '127.0.0.1',
    headers: { 'x-forwarded-for': client },
    payload: { email: `nobody${n}@example.com`, password: 'not the password at all' },
  });
}

t.test('behind a trusted proxy, the per-address lock is the forwarded client\'s', async (t) => {
  const a = await cloud(t, '127.0.0.1');
  for (let i = 0; i < 5; i++) t.equal((await wrongSignIn(a, '198.51.100.7', i)).json().code, 'AC_002');
  t.equal((await wrongSignIn(a, '198.51.100.7', 5)).json().code, 'AC_003', 'the client that failed five times is locked');
  t.equal((await wrongSignIn(a, '203.0.113.9', 6)).json().code, 'AC_002', 'another client behind the same proxy is not');
});

t.test('without trust_proxy X-Forwarded-For is ignored: the peer address counts', async (t) => {
  const a = await cloud(t, '');
  for (let i = 0; i < 5; i++) await wrongSignIn(a, `198.51.100.${i}`, i);
  t.equal((await wrongSignIn(a, '203.0.113.9', 6)).json().code, 'AC_003', 'a forged header does not escape the lock');
});

t.test('[server] trust_proxy takes addresses and CIDR ranges only', async (t) => {
  t.equal(parseConfig('[server]\ntrust_proxy = 127.0.0.1, 10.0.0.0/8, ::1, fd00::/8\n', '/tmp').server.trust_proxy,
    '127.0.0.1, 10.0.0.0/8, ::1, fd00::/8');
  for (const bad of ['true', '*', 'proxy.example.com', '10.0.0.0/33', '10.0.0.0/8/1']) {
    t.throws(() => parseConfig(`[server]\ntrust_proxy = ${bad}\n`, '/tmp'), /\[server\] trust_proxy/, bad);
  }
});
