// face-check account ...: the administrator's account commands (cloud). Accounts made here need no open
// registration and may be paid or administrators. The password comes from --password-file or stdin, never
// from the command line (where `ps` and shell histories would show it), and is never printed.
import fs from 'node:fs';
import { isPlan, PLANS, type AccountRole, type Plan } from '../domain/accounts';
import { ErrorCatalog } from '../errors';
import { AccountService } from '../accounts/accounts';
import { ActivationCodes, DEFAULT_CODE_VALID_DAYS } from '../licensing/cloud/activation-codes';
import { openCommandStore } from './open-store';
import { configOf, stringFlag, UsageError, type Args, type Io } from './args';

export const ACCOUNT_USAGE = `  face-check account create [--config <file.ini>] --email <address> [--plan ${PLANS.join('|')}] [--admin]
                            [--password-file <file>]   (else the password is read from stdin)
  face-check account list [--config <file.ini>]
  face-check account set-plan [--config <file.ini>] <accountId> ${PLANS.join('|')}
  face-check account registration-code [--config <file.ini>] [--plan ${PLANS.join('|')}] [--valid-days N]
  face-check account invite [--config <file.ini>] --email <address> [--plan ${PLANS.join('|')}] [--valid-days N]`;

/** Where a password is read from when no --password-file is given. */
export type SecretSource = () => Promise<string>;

export async function accountCommand(args: Args, io: Io, readSecret: SecretSource = passwordFromStdin): Promise<number> {
  const [, sub, ...rest] = args.positional;
  const config = configOf(args);
  // Flags checked before the password is asked for, and the password asked for before the store opens.
  const creation = sub === 'create' ? creationOf(args) : undefined;
  const password = creation ? await passwordOf(args, readSecret) : undefined;
  const store = await openCommandStore(config);
  try {
    const accounts = new AccountService({ config, store, errors: new ErrorCatalog() });
    switch (sub) {
      case 'create': {
        if (rest.length) throw new UsageError('account create takes no arguments besides its options');
        const { email, plan, role } = creation!;
        const { account, apiKey } = await accounts.createByAdministrator(email, password!, { plan, role });
        io.out(`created account ${account.accountId} (${account.email}, role ${account.role}, plan ${account.plan})`);
        io.out(`created key ${apiKey.keyId} (role ${apiKey.role}, label "${apiKey.label}")`);
        io.out(`Api-Key: ${apiKey.key}`);
        io.out('the key is shown only this once');
        return 0;
      }
      case 'list': {
        if (rest.length) throw new UsageError('account list takes no arguments');
        io.out(['accountId', 'email', 'role', 'plan', 'created'].join('\t'));
        for (const a of await accounts.list()) io.out([a.accountId, a.email, a.role, a.plan, a.created].join('\t'));
        return 0;
      }
      case 'set-plan': {
        const [accountId, plan] = rest;
        if (rest.length !== 2 || !isPlan(plan)) throw new UsageError(`account set-plan needs <accountId> ${PLANS.join('|')}`);
        const view = await accounts.setPlan(accountId, plan);
        if (!view) {
          io.err(`face-check: no account with id ${accountId} (see account list)`);
          return 1;
        }
        io.out(`account ${view.accountId} (${view.email}): plan ${view.plan}`);
        return 0;
      }
      case 'registration-code':
      case 'invite': {
        // A code that opens one account ([accounts] registration = activation-code; invitation: bound to --email).
        if (rest.length) throw new UsageError(`account ${sub} takes no arguments besides its options`);
        const email = stringFlag(args, 'email');
        if (sub === 'invite' && email === undefined) throw new UsageError('account invite needs --email <address>');
        if (sub === 'registration-code' && email !== undefined) throw new UsageError('account registration-code takes no --email (see account invite)');
        const plan = stringFlag(args, 'plan') ?? 'free';
        if (!isPlan(plan)) throw new UsageError(`--plan: one of ${PLANS.join(', ')}`);
        const daysText = stringFlag(args, 'valid-days');
        if (daysText !== undefined && !/^[1-9]\d{0,4}$/.test(daysText)) throw new UsageError('--valid-days: a whole number, 1 or more');
        const days = daysText === undefined ? DEFAULT_CODE_VALID_DAYS : Number(daysText);
        const { code, record } = await new ActivationCodes(store.activationCodes).issue(plan, days, new Date(), email === undefined ? {} : { email });
        const who = record.email ? `for ${record.email} ` : '';
        io.out(`registration code ${record.codeId} ${who}(plan ${plan}), valid until ${record.expires}, usable once:`);
        io.out(code);
        io.out('the code is shown only this once');
        const mode = config.accounts.registration;
        if (mode === 'open' || mode === 'closed' || (mode === 'invitation' && sub === 'registration-code')) {
          io.err(`note: [accounts] registration = ${mode}: registration takes ${mode === 'invitation' ? 'only invitations (account invite)' : 'no code'}`);
        }
        return 0;
      }
      default:
        throw new UsageError(`account: unknown subcommand ${sub ?? '(none)'}`);
    }
  } finally {
    await store.close();
  }
}

function creationOf(args: Args): { email: string; plan: Plan; role: AccountRole } {
  const email = stringFlag(args, 'email');
  if (email === undefined) throw new UsageError('account create needs --email <address>');
  const plan = stringFlag(args, 'plan') ?? 'free';
  if (!isPlan(plan)) throw new UsageError(`--plan: one of ${PLANS.join(', ')}`);
  return { email, plan, role: args.flags.get('admin') === true ? 'administrator' : 'operator' };
}

async function passwordOf(args: Args, readSecret: SecretSource): Promise<string> {
  const file = stringFlag(args, 'password-file');
  let text: string;
  if (file !== undefined) {
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--password-file: ${(err as Error).message}`);
    }
  } else {
    text = await readSecret();
  }
  // The first line: a file or a pipe ends it with a newline that is not part of the password.
  const password = text.split(/\r?\n/, 1)[0];
  if (!password) throw new UsageError('the password is empty (give --password-file <file> or one line on stdin)');
  return password;
}

/** A terminal is asked twice, without echo; a pipe is read to its end. */
async function passwordFromStdin(): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  const first = await hiddenLine('Password: ');
  const again = await hiddenLine('Password again: ');
  if (first !== again) throw new UsageError('the two passwords differ');
  return first;
}

function hiddenLine(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let text = '';
    const finish = (outcome: () => void) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      outcome();
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish(() => resolve(text));
        if (ch === '\u0003') return finish(() => reject(new UsageError('cancelled')));
        if (ch === '\u007f' || ch === '\b') text = [...text].slice(0, -1).join('');
        else text += ch;
      }
    };
    stdin.on('data', onData);
  });
}
