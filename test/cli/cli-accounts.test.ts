// face-check account create | list | set-plan, through main() as the command line runs it, and once as a real
// process reading the password from stdin. The password never appears in what the commands print.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { main } from '../../src/cli/main';
import { verifyPassword } from '../../src/accounts/passwords';
import { openStore } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';
import { repoRoot } from '../helpers/errors';

const PASSWORD = 'a long CLI password';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err, all: () => [...out, ...err].join('\n') };
}

function setup(t: { teardown(fn: () => unknown): void }) {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'test.ini');
  fs.writeFileSync(ini, '[server]\nmode = cloud\nport = 0\n[storage]\npath = ./db\n');
  const passwordFile = path.join(dir, 'password.txt');
  fs.writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  return { dir, ini, passwordFile };
}

t.test('account create | list | set-plan', async (t) => {
  const { dir, ini, passwordFile } = setup(t);
  const c = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'Ann@Example.com', '--password-file', passwordFile], c.io), 0, c.all());
  const accountId = /^created account (acc_[A-Za-z0-9_-]{12}) \(ann@example\.com, role operator, plan free\)$/.exec(c.out[0])?.[1];
  t.ok(accountId, c.out[0]);
  const key = c.out.find((l) => l.startsWith('Api-Key: '))?.slice(9);
  t.match(key, /^fc_[A-Za-z0-9_-]{32}$/, 'the free plan\'s key is printed');
  t.notMatch(c.all(), PASSWORD, 'the password is not printed');

  const admin = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'root@example.com', '--plan', 'paid', '--admin',
    `--password-file=${passwordFile}`], admin.io), 0, admin.all());
  t.match(admin.out[0], /role administrator, plan paid\)$/);

  const taken = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'ANN@example.com', '--password-file', passwordFile], taken.io), 1);
  t.match(taken.err[0], /AC_001: An account already exists with this e-mail address/);

  const l = capture();
  t.equal(await main(['account', 'list', '--config', ini], l.io), 0);
  t.equal(l.out[0], 'accountId\temail\trole\tplan\tcreated');
  t.equal(l.out.length, 3);
  t.match(l.out[1], new RegExp(`^${accountId}\tann@example\\.com\toperator\tfree\t\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
  t.match(l.out[2], /^acc_\S+\troot@example\.com\tadministrator\tpaid\t/);
  t.notMatch(l.all(), /scrypt|fc_/, 'neither password hashes nor keys are listed');

  const s = capture();
  t.equal(await main(['account', 'set-plan', '--config', ini, accountId!, 'paid'], s.io), 0);
  t.equal(s.out[0], `account ${accountId} (ann@example.com): plan paid`);
  const l2 = capture();
  await main(['account', 'list', '--config', ini], l2.io);
  t.match(l2.out[1], /\toperator\tpaid\t/, 'the plan changed');
  const missing = capture();
  t.equal(await main(['account', 'set-plan', '--config', ini, 'acc_nobody', 'paid'], missing.io), 1);
  t.match(missing.err[0], /no account with id acc_nobody/);
  const badPlan = capture();
  t.equal(await main(['account', 'set-plan', '--config', ini, accountId!, 'gold'], badPlan.io), 2);

  const store = await openStore(path.join(dir, 'db'));
  t.teardown(() => store.close());
  const record = store.accounts.get(accountId!)!;
  t.ok(await verifyPassword(PASSWORD, record.passwordHash), 'the file\'s first line is the password');
  t.same(store.apiKeys.lookup(key!)?.accountId, accountId, 'the printed key belongs to the account');
});

t.test('account create: refusals', async (t) => {
  const { dir, ini } = setup(t);
  const short = path.join(dir, 'short.txt');
  fs.writeFileSync(short, 'tiny\n');
  const weak = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'ann@example.com', '--password-file', short], weak.io), 1);
  t.match(weak.err[0], /R_003: Fields validation exception: password: at least 10 characters/);
  t.notMatch(weak.all(), 'tiny', 'not even a refused password is printed');
  const noEmail = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--password-file', short], noEmail.io), 2);
  t.match(noEmail.err[0], /--email/);
  const plan = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'a@b.c', '--plan', 'gold', '--password-file', short], plan.io), 2);
  const noFile = capture();
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'a@b.c', '--password-file', path.join(dir, 'none')], noFile.io), 2);
  t.match(noFile.err[0], /--password-file/);
  t.equal(await main(['account', 'create', '--config', ini, '--email', 'a@b.c', '--password', PASSWORD], capture().io), 2,
    'no --password option: a password on the command line would show in ps and shell histories');
  t.same(await listed(ini), ['accountId\temail\trole\tplan\tcreated'], 'nothing was created');
});

async function listed(ini: string): Promise<string[]> {
  const c = capture();
  await main(['account', 'list', '--config', ini], c.io);
  return c.out;
}

t.test('account create reads the password from stdin when no file is given (a real process)', async (t) => {
  const { ini } = setup(t);
  // The TypeScript loader flags tap gave this process let the child run src/cli/main.ts as the program.
  const r = spawnSync(process.execPath, [...process.execArgv, path.join(repoRoot, 'src', 'cli', 'main.ts'),
    'account', 'create', '--config', ini, '--email', 'pipe@example.com'], { input: `${PASSWORD}\n`, encoding: 'utf8', cwd: repoRoot });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^created account acc_\S+ \(pipe@example\.com, role operator, plan free\)$/m);
  t.match(r.stdout, /^Api-Key: fc_/m);
  t.notMatch(r.stdout + r.stderr, PASSWORD, 'the password is not echoed');
  const store = await openStore(path.join(path.dirname(ini), 'db'));
  t.teardown(() => store.close());
  t.ok(await verifyPassword(PASSWORD, store.accounts.byEmail('pipe@example.com')!.passwordHash));
});

t.test('account registration-code | invite: single-use codes that open an account', async (t) => {
  const { dir, ini } = setup(t);
  fs.writeFileSync(ini, '[server]\nmode = cloud\nport = 0\n[storage]\npath = ./db\n[accounts]\nregistration = invitation\n');
  const invite = capture();
  t.equal(await main(['account', 'invite', '--config', ini, '--email', 'Ann@Example.com', '--plan', 'paid'], invite.io), 0, invite.all());
  t.match(invite.out[0], /^registration code [0-9a-f]{8} for ann@example\.com \(plan paid\), valid until \S+, usable once:$/);
  t.match(invite.out[1], /^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
  t.same(invite.err, [], 'invitation mode: no note');
  const open = capture();
  t.equal(await main(['account', 'registration-code', '--config', ini], open.io), 0);
  t.match(open.err[0], /registration = invitation: registration takes only invitations/, 'a code for anyone is noted as unused in this mode');
  t.equal(await main(['account', 'invite', '--config', ini], capture().io), 2, 'invite needs --email');
  const store = await openStore(path.join(dir, 'db'));
  t.teardown(() => store.close());
  const codes = store.activationCodes.list();
  t.same(codes.map((c) => [c.purpose, c.email, c.plan]).sort(), [['registration', 'ann@example.com', 'paid'], ['registration', undefined, 'free']].sort());
});
