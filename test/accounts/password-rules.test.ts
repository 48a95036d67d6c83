// The rules a new password meets (NIST SP 800-63B 5.1.1.2) wherever one is set: registration (account API and
// back-office page), the password change, and the administrator's `face-check account create`. Common and
// breached passwords from the list shipped with the program, only-space and control-character passwords,
// repetitions, sequences and the service's or the operator's own name are refused with R_003 and the reason;
// a long passphrase with spaces and any Unicode is accepted, and compatibility forms (NFKC) are one password.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { main } from '../../src/cli/main';
import { COMMON_PASSWORDS } from '../../src/accounts/common-passwords';
import { passwordProblem } from '../../src/accounts/password-policy';
import { verifyPassword } from '../../src/accounts/passwords';
import { startTestApp, tempDir, type TestApp } from '../helpers/app';

const GOOD = 'correct horse battery';
const PASSPHRASE = 'Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich, 🐴 und 東京 inklusive';

async function cloud(t: Test): Promise<TestApp> {
  const a = await startTestApp({ tune: (c) => { c.server.mode = 'cloud'; c.accounts.registrations_per_address = 1000; } });
  t.teardown(() => a.close());
  return a;
}

function register(a: TestApp, email: string, password: string) {
  return a.call({ method: 'POST', url: '/account/v1/register', key: null, remoteAddress: '198.51.100.1', payload: { email, password } });
}

const REFUSED: Array<[string, string, RegExp]> = [
  ['a common password', 'password123', /password: it is on the list of common and breached passwords/],
  ['a common password with digits added', 'baseball2024', /list of common and breached passwords/],
  ['a breached keyboard walk', 'qwertyuiop', /list of common and breached passwords/],
  ['ten spaces', ' '.repeat(10), /password: it is only spaces/],
  ['ten NUL characters', '\u0000'.repeat(10), /password: control characters \(such as NUL, tab or line breaks\) are not allowed/],
  ['a line break inside', 'correct horse\nbattery staple', /control characters/],
  ['one letter repeated', 'aaaaaaaaaa', /password: it repeats a few characters/],
  ['a short unit repeated', 'xyzq xyzq xyzq', /it repeats a few characters/],
  ['a sequence', '9876543210', /(sequence of characters|list of common)/],
  ['two runs', 'abcdefg1234567', /password: it is a sequence of characters/],
  ['the service\'s name', 'FaceCheck2026!', /password: it is made from the name of this service/],
  ['the e-mail address\'s local part', 'ann.smith 2026', /password: it is made from your e-mail address/],
  ['too short', 'tiny', /password: at least 10 characters/],
];

t.test('registration refuses weak passwords with R_003 and the reason', async (t) => {
  const a = await cloud(t);
  for (const [what, password, reason] of REFUSED) {
    const res = await register(a, 'ann.smith@example.com', password);
    t.same([res.statusCode, res.json().code], [400, 'R_003'], what);
    t.match(res.json().message, reason, what);
  }
  t.same(await a.store.accounts.list(), [], 'no account was made');
});

t.test('a long passphrase with spaces and Unicode is accepted, and NFKC forms are one password', async (t) => {
  const a = await cloud(t);
  t.ok([...PASSPHRASE].length > 64, 'longer than 64 characters');
  t.equal((await register(a, 'ann@example.com', PASSPHRASE)).statusCode, 200);
  const signIn = (email: string, password: string) =>
    a.call({ method: 'POST', url: '/account/v1/sessions', key: null, remoteAddress: '198.51.100.1', payload: { email, password } });
  t.equal((await signIn('ann@example.com', PASSPHRASE)).statusCode, 200);
  t.equal((await signIn('ann@example.com', PASSPHRASE.normalize('NFD'))).statusCode, 200, 'typed decomposed');
  // Full-width letters (a CJK keyboard's) are the same password as ASCII ones.
  t.equal((await register(a, 'bob@example.com', 'ｃｏｒｒｅｃｔ ｈｏｒｓｅ ｂａｔｔｅｒｙ')).statusCode, 200);
  t.equal((await signIn('bob@example.com', GOOD)).statusCode, 200, 'the full-width password signs in typed in ASCII');
  t.equal((await register(a, 'carl@example.com', 'x'.repeat(3) + crypto.randomBytes(600).toString('base64'))).statusCode, 200, 'long: 800 characters');
});

t.test('the password change and the back-office page follow the same rules', async (t) => {
  const a = await cloud(t);
  t.equal((await register(a, 'ann@example.com', GOOD)).statusCode, 200);
  const token = (await a.call({ method: 'POST', url: '/account/v1/sessions', key: null, payload: { email: 'ann@example.com', password: GOOD } })).json().token;
  const change = (newPassword: string) => a.call({
    method: 'PUT', url: '/account/v1/password', key: null, headers: { authorization: `Bearer ${token}` }, payload: { currentPassword: GOOD, newPassword },
  });
  const spaces = await change(' '.repeat(12));
  t.same([spaces.statusCode, spaces.json().code], [400, 'R_003']);
  t.match(spaces.json().message, /only spaces/);
  t.match((await change('iloveyou123')).json().message, /list of common and breached passwords/);
  t.equal((await change(PASSPHRASE)).statusCode, 200, 'a good one is taken');

  const page = await a.app.inject({ method: 'GET', url: '/back-office/register' });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1];
  const cookie = [page.headers['set-cookie'] ?? []].flat().map((c) => c.split(';')[0]).join('; ');
  const posted = await a.app.inject({
    method: 'POST', url: '/back-office/register', payload: new URLSearchParams({ csrf, email: 'bob@example.com', password: 'aaaaaaaaaaaa' }).toString(),
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(posted.statusCode, 400);
  t.match(posted.body, /it repeats a few characters/);
});

t.test('face-check account create refuses a common password', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'test.ini');
  fs.writeFileSync(ini, '[server]\nmode = cloud\nport = 0\n[storage]\npath = ./db\n');
  const file = path.join(dir, 'password.txt');
  fs.writeFileSync(file, 'password1234\n', { mode: 0o600 });
  const err: string[] = [];
  const io = { out: () => undefined, err: (l: string) => err.push(l) };
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'root@example.com', '--password-file', file], io), 1);
  t.match(err[0], /R_003: Fields validation exception: password: it is on the list of common and breached passwords/);
});

t.test('the shipped list: thousands of common passwords, none shorter than the least minimum', async (t) => {
  t.ok(COMMON_PASSWORDS.length > 10_000, `${COMMON_PASSWORDS.length} entries`);
  t.ok(COMMON_PASSWORDS.every((p) => [...p].length >= 8 && p === p.toLowerCase()), 'lower-cased, 8 characters or more');
  const rules = { minLength: 8, maxLength: 1024 };
  for (const p of ['12345678', 'sunshine', 'trustno1', 'Superman']) t.ok(passwordProblem(p, rules), `${p} refused`);
  t.equal(passwordProblem('tr0ub4dor & 3 horses', rules), undefined);
  t.ok(await verifyPassword('x', 'not a hash') === false);
});

t.test('a password hashed before NFKC (NFC only) still signs in', async (t) => {
  const password = 'ﬁsh and chips², twice';  // a ligature and a superscript: NFKC folds them, NFC does not
  t.not(password.normalize('NFKC'), password.normalize('NFC'));
  const salt = crypto.randomBytes(16);
  const hash = crypto.scryptSync(password.normalize('NFC'), salt, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 2 * 128 * 2 ** 15 * 8 });
  const legacy = ['scrypt', 2 ** 15, 8, 1, salt.toString('base64'), hash.toString('base64')].join('$');
  t.ok(await verifyPassword(password, legacy), 'verified');
  t.notOk(await verifyPassword('fish and chips2, twice', legacy), 'the folded form is not the legacy hash\'s password');
});
