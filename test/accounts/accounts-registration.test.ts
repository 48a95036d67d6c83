// Who may open an account, and how many one client may open: [accounts] registration (open, activation-code,
// invitation, closed) on the account API and on the back-office page; registrations counted per client
// address and per network (IPv4 /24, IPv6 /64), taken addresses included, so a sign-up farm gets a few free
// test plans rather than dozens, and the "address taken" answer cannot be collected at scale.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config/types';
import { ActivationCodes } from '../../src/licensing/cloud/activation-codes';
import { clientNetwork } from '../../src/accounts/client-network';
import { startTestApp, type TestApp } from '../helpers/app';
import { BACKENDS, backendSkipReason, startBackendApp } from '../helpers/backends';

const PASSWORD = 'correct horse battery';

async function cloud(t: Test, tune: (c: Config) => void = () => undefined): Promise<TestApp> {
  // A still clock: the Retry-After figures below are exact, however slow the machine.
  const now = Date.now();
  const a = await startTestApp({ tune: (c) => { c.server.mode = 'cloud'; tune(c); }, deps: { now: () => new Date(now) } });
  t.teardown(() => a.close());
  return a;
}

function register(a: TestApp, email: string, ip: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return a.call({ method: 'POST', url: '/account/v1/register', key: null, remoteAddress: ip, headers, payload: { email, password: PASSWORD, ...extra } });
}

function codeOf(res: LightMyRequestResponse): string {
  return res.json().code;
}

async function issue(a: TestApp, email?: string): Promise<string> {
  return (await new ActivationCodes(a.store.activationCodes).issue('free', 30, new Date(), email === undefined ? {} : { email })).code;
}

/** The back-office registration form, posted as a browser does (the CSRF token read off the page). */
async function registerOnPage(a: TestApp, fields: Record<string, string>, ip = '198.51.100.20'): Promise<LightMyRequestResponse> {
  const page = await a.app.inject({ method: 'GET', url: '/back-office/register', remoteAddress: ip });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
  const cookie = [page.headers['set-cookie'] ?? []].flat().map((c) => c.split(';')[0]).join('; ');
  if (!csrf) return page;
  return a.app.inject({
    method: 'POST', url: '/back-office/register', remoteAddress: ip, payload: new URLSearchParams({ csrf, ...fields }).toString(),
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
  });
}

t.test('a sign-up farm is refused after registrations_per_address from one address and registrations_per_network from one /24', async (t) => {
  const a = await cloud(t);
  for (let i = 0; i < 3; i++) t.equal((await register(a, `farm${i}@example.com`, '198.51.100.7')).statusCode, 200, `registration ${i + 1}`);
  const fourth = await register(a, 'farm3@example.com', '198.51.100.7');
  t.same([fourth.statusCode, codeOf(fourth)], [429, 'AC_003'], 'the fourth from that address is refused');
  t.equal(fourth.headers['retry-after'], String(24 * 3600), 'Retry-After: until the first leaves the 24-hour window');
  t.equal(fourth.json().message, 'Too many failed sign-in attempts: too many registrations from this address or its network; try again in 86400 seconds');
  const forged = await register(a, 'farm4@example.com', '198.51.100.7', {}, { 'x-forwarded-for': '203.0.113.50' });
  t.equal(forged.statusCode, 429, 'a forged X-Forwarded-For does not dodge it (no trust_proxy)');

  // Neighbours in the same /24: seven more reach registrations_per_network (10), then the network is refused.
  for (let i = 10; i < 17; i++) t.equal((await register(a, `farm${i}@example.com`, `198.51.100.${i}`)).statusCode, 200);
  const neighbour = await register(a, 'farm99@example.com', '198.51.100.99');
  t.same([neighbour.statusCode, codeOf(neighbour)], [429, 'AC_003'], 'the /24 is refused after ten');
  t.equal((await register(a, 'elsewhere@example.com', '203.0.113.5')).statusCode, 200, 'another network is not');
});

t.test('an IPv6 /64 counts as one network', async (t) => {
  const a = await cloud(t, (c) => { c.accounts.registrations_per_network = 2; });
  t.equal((await register(a, 'v6a@example.com', '2001:db8:1:2::1')).statusCode, 200);
  t.equal((await register(a, 'v6b@example.com', '2001:db8:1:2:ffff::9')).statusCode, 200);
  t.equal((await register(a, 'v6c@example.com', '2001:db8:1:2:1:2:3:4')).statusCode, 429, 'a third address in the /64');
  t.equal((await register(a, 'v6d@example.com', '2001:db8:1:3::1')).statusCode, 200, 'the next /64 is another network');
  t.equal(clientNetwork('::ffff:192.0.2.77'), '192.0.2.0/24', 'an IPv4-mapped address is its IPv4 network');
  t.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
});

t.test('a taken e-mail address cannot be probed at scale: probes count as registrations', async (t) => {
  const a = await cloud(t);
  t.equal((await register(a, 'ann@example.com', '203.0.113.1')).statusCode, 200);
  const answers: string[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await register(a, i % 2 ? 'ann@example.com' : `probe${i}@example.com`, '192.0.2.66');
    answers.push(res.statusCode === 200 ? 'new' : codeOf(res));
  }
  t.same(answers.slice(0, 3), ['new', 'AC_001', 'new'], 'the first answers tell');
  t.same(answers.slice(3), Array(27).fill('AC_003'), 'then every probe is throttled, taken or not');
  const answersFromNetwork: string[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await register(a, 'ann@example.com', `192.0.2.${100 + i}`);
    answersFromNetwork.push(codeOf(res));
  }
  t.equal(answersFromNetwork.filter((c) => c === 'AC_001').length, 7, 'new addresses in the same /24 add up to registrations_per_network');
  t.equal(answersFromNetwork.filter((c) => c === 'AC_003').length, 23);
});

t.test('registration = closed: neither the account API nor the page opens an account', async (t) => {
  const a = await cloud(t, (c) => { c.accounts.registration = 'closed'; });
  const api = await register(a, 'ann@example.com', '198.51.100.1');
  t.same([api.statusCode, codeOf(api)], [403, 'FORBIDDEN']);
  const page = await a.app.inject({ method: 'GET', url: '/back-office/register' });
  t.match(page.body, /Registration is closed/);
  t.notMatch(page.body, /name="password"/, 'no form');
  t.same(await a.store.accounts.list(), []);
});

t.test('registration = open: anyone, no code', async (t) => {
  const a = await cloud(t);
  t.equal((await register(a, 'ann@example.com', '198.51.100.1')).statusCode, 200);
  const page = await registerOnPage(a, { email: 'bob@example.com', password: PASSWORD });
  t.equal(page.statusCode, 303, 'the page registers');
  t.equal((await a.store.accounts.list()).length, 2);
});

t.test('registration = activation-code: a registration code an administrator issued opens one account', async (t) => {
  const a = await cloud(t, (c) => { c.accounts.registration = 'activation-code'; });
  const none = await register(a, 'ann@example.com', '198.51.100.1');
  t.same([none.statusCode, codeOf(none)], [400, 'LC_001'], 'no code: refused');
  const wrong = await register(a, 'ann@example.com', '198.51.100.1', { activationCode: '7KQ2-M9XD-0T4B-HW3R' });
  t.same([wrong.statusCode, codeOf(wrong)], [400, 'LC_002'], 'an unknown code: refused');
  const licenceCode = (await new ActivationCodes(a.store.activationCodes).issue('free', 30, new Date())).code;
  t.equal(codeOf(await register(a, 'ann@example.com', '198.51.100.1', { activationCode: licenceCode })), 'LC_002',
    'a licence\'s activation code does not open an account');
  const code = await issue(a);
  const ok = await register(a, 'ann@example.com', '198.51.100.1', { activationCode: code.toLowerCase() });
  t.equal(ok.statusCode, 200, ok.body);
  const again = await register(a, 'bob@example.com', '198.51.100.2', { activationCode: code });
  t.same([codeOf(again), again.json().message], ['LC_002', 'Activation code refused: the code was already used'], 'once only');

  const taken = await issue(a);
  t.equal(codeOf(await register(a, 'ann@example.com', '198.51.100.3', { activationCode: taken })), 'AC_001');
  t.equal((await register(a, 'carl@example.com', '198.51.100.3', { activationCode: taken })).statusCode, 200,
    'a code refused for a taken address is not spent');

  const pageWithout = await registerOnPage(a, { email: 'dora@example.com', password: PASSWORD });
  t.equal(pageWithout.statusCode, 400, 'the page without a code: refused');
  t.match(pageWithout.body, /An activation code is required/);
  const form = await a.app.inject({ method: 'GET', url: '/back-office/register' });
  t.match(form.body, /name="activationCode"/, 'the page asks for the code');
  const pageWith = await registerOnPage(a, { email: 'dora@example.com', password: PASSWORD, activationCode: await issue(a) });
  t.equal(pageWith.statusCode, 303, 'the page with a code registers');
});

t.test('registration = invitation: only the invited address, with its code', async (t) => {
  const a = await cloud(t, (c) => { c.accounts.registration = 'invitation'; });
  const invitation = await issue(a, 'Ann@Example.com');
  t.equal(codeOf(await register(a, 'ann@example.com', '198.51.100.1')), 'LC_001', 'no code: refused');
  const other = await register(a, 'eve@example.com', '198.51.100.2', { activationCode: invitation });
  t.same([codeOf(other), other.json().message],
    ['LC_002', 'Activation code refused: the invitation was sent to another e-mail address; register with that one']);
  const open = await register(a, 'eve@example.com', '198.51.100.2', { activationCode: await issue(a) });
  t.equal(codeOf(open), 'LC_002', 'a code for no address is not an invitation');
  t.equal((await register(a, 'ann@example.com', '198.51.100.1', { activationCode: invitation })).statusCode, 200, 'the invited address registers');

  const bob = await issue(a, 'bob@example.com');
  const wrongOnPage = await registerOnPage(a, { email: 'eve@example.com', password: PASSWORD, activationCode: bob });
  t.equal(wrongOnPage.statusCode, 400, 'the page refuses another address');
  t.match(wrongOnPage.body, /another e-mail address/);
  t.equal((await registerOnPage(a, { email: 'bob@example.com', password: PASSWORD, activationCode: bob })).statusCode, 303, 'the page registers the invited address');
  t.same((await a.store.accounts.list()).map((x) => x.email).sort(), ['ann@example.com', 'bob@example.com']);
});

t.test('the back-office page is throttled like the account API', async (t) => {
  const a = await cloud(t);
  for (let i = 0; i < 3; i++) t.equal((await registerOnPage(a, { email: `p${i}@example.com`, password: PASSWORD }, '192.0.2.9')).statusCode, 303);
  const fourth = await registerOnPage(a, { email: 'p3@example.com', password: PASSWORD }, '192.0.2.9');
  t.equal(fourth.statusCode, 429);
  t.match(fourth.body, /Too many attempts, try again in 1440 minutes/);
});

for (const backend of BACKENDS) {
  t.test(`registrations count for the whole window, pruning of sign-in failures included (${backend})`, { skip: backendSkipReason(backend) }, async (t) => {
    const clock = { ms: Date.parse('2026-03-02T09:00:00.000Z') };
    const app = await startBackendApp(backend, { tune: (c) => { c.server.mode = 'cloud'; }, deps: { now: () => new Date(clock.ms) } });
    t.teardown(() => app.close());
    const reg = (email: string) => app.call({ method: 'POST', url: '/account/v1/register', key: null, remoteAddress: '198.51.100.7', payload: { email, password: PASSWORD } });
    for (let i = 0; i < 3; i++) t.equal((await reg(`r${i}@example.com`)).statusCode, 200);
    // Two hours on: far past the sign-in lockout window, when the throttle prunes what it no longer counts.
    clock.ms += 2 * 3_600_000;
    t.equal((await reg('r3@example.com')).statusCode, 429, 'two hours later: still refused');
    await new Promise((resolve) => setTimeout(resolve, 200));  // the prune it started
    const again = await reg('r4@example.com');
    t.same([again.statusCode, again.headers['retry-after']], [429, String(22 * 3600)], 'and after the prune: the registrations were kept');
    clock.ms += 22 * 3_600_000 + 1000;
    t.equal((await reg('r5@example.com')).statusCode, 200, 'a day after the first: allowed again');
  });
}
