// face-check licence ...: the administrator's licence commands (cloud). The command line acts for any
// account: a licence made here needs no activation code and is not held to the plan's licence count. Keys and
// activation codes are printed once; a licence key stays readable in its installation command (install-command).
import { PLANS, isPlan } from '../domain/accounts';
import { GRANTS } from '../domain/grants';
import { ErrorCatalog } from '../errors';
import { parseInstallChoice } from '../install/install-choice';
import { ActivationCodes, DEFAULT_CODE_VALID_DAYS } from '../licensing/cloud/activation-codes';
import { LicenceService, type LicenceView } from '../licensing/cloud/licences';
import { PackageFile } from '../install/package-file';
import { publicUrl } from '../licensing/cloud/public-url';
import type { LicenceRecord } from '../storage/records';
import type { AsyncStore } from '../storage/interfaces';
import { DEVICE_KEY_USAGE, deviceKeyCommand } from './licence-device-keys';
import { openCommandStore } from './open-store';
import { ACCOUNT_ID, configOf, stringFlag, UsageError, type Args, type Io } from './args';

export const LICENCE_USAGE = `  face-check licence create [--config <file.ini>] --account <id> --grants <${GRANTS.join(',')}>
                            [--label <text>] [--max-persons N] [--expires <ISO 8601>]
  face-check licence update [--config <file.ini>] <licenceId> [--grants <g,g,...>] [--label <text>]
                            [--max-persons N|none] [--expires <ISO 8601>|none]
  face-check licence list [--config <file.ini>] [--account <id>]
  face-check licence revoke|release [--config <file.ini>] <licenceId>
  face-check licence install-command [--config <file.ini>] <licenceId> [--camera <source>|none] [--port <n>]
  face-check licence activation-code [--config <file.ini>] --plan ${PLANS.join('|')} [--valid-days N]
${DEVICE_KEY_USAGE}`;

const ANY_ACCOUNT = { anyAccount: true } as const;

export async function licenceCommand(args: Args, io: Io): Promise<number> {
  const [, sub, ...rest] = args.positional;
  const config = configOf(args);
  const store = await openCommandStore(config);
  try {
    const packageFile = new PackageFile(config);
    const errors = new ErrorCatalog();
    const licences = new LicenceService({
      config, store, errors, now: () => new Date(),
      devicePackage: () => packageFile.get(),
      serverUrl: () => publicUrl(config),
    });
    const oneId = () => {
      if (rest.length !== 1) throw new UsageError(`licence ${sub} needs one licenceId (see licence list)`);
      return rest[0];
    };
    switch (sub) {
      case 'device-key':
        return await deviceKeyCommand(args, io, { store, errors, licences });
      case 'create': {
        const account = stringFlag(args, 'account');
        if (account === undefined || !ACCOUNT_ID.test(account)) throw new UsageError('--account: the account id the licence belongs to');
        const grants = stringFlag(args, 'grants');
        if (grants === undefined) throw new UsageError(`--grants: a comma-separated list of ${GRANTS.join(', ')} (empty: none yet)`);
        const view = await licences.create(account, {
          label: stringFlag(args, 'label') ?? '', grants, maxPersons: wholeNumber(args, 'max-persons') ?? null,
          expires: stringFlag(args, 'expires') ?? null,
        }, { byAdministrator: true });
        io.out(`created licence ${view.licenceId} (account ${account}, grants ${view.grants.join(',') || 'none'})`);
        io.out(`licence key: ${view.licenceKey}`);
        if (view.installCommand === null) {
          io.err(`no installation command: ${await whyNoCommand(packageFile, view)}`);
          return 0;
        }
        io.out('installation command (run it as root on the device):');
        io.out(view.installCommand);
        return 0;
      }
      case 'list': {
        const account = stringFlag(args, 'account');
        const records = account === undefined ? await store.licences.list() : await store.licences.listByAccount(account);
        io.out(['licenceId', 'account', 'status', 'grants', 'device', 'lastCheck', 'usageToday', 'expires', 'label'].join('\t'));
        for (const r of records) io.out(await listLine(store, r));
        return 0;
      }
      case 'update': {
        // Step 3 of the set-up (the grants) and the other settings of a licence line; a running device
        // takes them at its next check.
        const id = oneId();
        const grants = stringFlag(args, 'grants');
        const label = stringFlag(args, 'label');
        const maxPersons = stringFlag(args, 'max-persons');
        const expires = stringFlag(args, 'expires');
        if ([grants, label, maxPersons, expires].every((v) => v === undefined)) {
          throw new UsageError('licence update needs --grants, --label, --max-persons or --expires');
        }
        if (maxPersons !== undefined && maxPersons !== 'none' && !/^\d{1,10}$/.test(maxPersons)) {
          throw new UsageError('--max-persons: a whole number, or none');
        }
        const record = await licences.update(ANY_ACCOUNT, id, {
          grants, label,
          maxPersons: maxPersons === undefined ? undefined : maxPersons === 'none' ? null : Number(maxPersons),
          expires: expires === undefined ? undefined : expires === 'none' ? null : expires,
        });
        io.out(`updated ${record.licenceId}: grants ${record.grants.join(',') || 'none'}, most persons ` +
          `${record.limits.maxPersons ?? 'no limit'}, expires ${record.expires ?? 'never'}; its device takes it at its next check`);
        return 0;
      }
      case 'revoke': {
        const record = await licences.revoke(ANY_ACCOUNT, oneId());
        io.out(`revoked ${record.licenceId} (account ${record.accountId}): its device's next check is refused`);
        return 0;
      }
      case 'release': {
        const record = await licences.release(ANY_ACCOUNT, oneId());
        io.out(`released ${record.licenceId}: the next device to check in with its key binds to it`);
        return 0;
      }
      case 'install-command': {
        let choice;
        try {
          choice = parseInstallChoice(stringFlag(args, 'camera'), stringFlag(args, 'port'));
        } catch (err) {
          throw new UsageError(`install-command: ${(err as Error).message}`);
        }
        const view = await licences.get(ANY_ACCOUNT, oneId(), choice);
        if (view.installCommand === null) {
          io.err(`no installation command: ${await whyNoCommand(packageFile, view)}`);
          return 1;
        }
        io.out(view.installCommand);
        return 0;
      }
      case 'activation-code': {
        const plan = stringFlag(args, 'plan');
        if (plan === undefined || !isPlan(plan)) throw new UsageError(`--plan: one of ${PLANS.join(', ')}`);
        const days = wholeNumber(args, 'valid-days') ?? DEFAULT_CODE_VALID_DAYS;
        if (days < 1) throw new UsageError('--valid-days: 1 or more');
        const { code, record } = await new ActivationCodes(store.activationCodes).issue(plan, days, new Date());
        io.out(`activation code ${record.codeId} for the ${plan} plan, valid until ${record.expires}, usable once:`);
        io.out(code);
        io.out('the code is shown only this once');
        return 0;
      }
      default:
        throw new UsageError(`licence: unknown subcommand ${sub ?? '(none)'}`);
    }
  } finally {
    await store.close();
  }
}

async function listLine(store: AsyncStore, r: LicenceRecord): Promise<string> {
  const today = await store.licenceUsage.day(r.licenceId, new Date().toISOString().slice(0, 10));
  const usage = Object.entries(today).map(([op, n]) => `${op}=${n}`).join(',');
  return [
    r.licenceId, r.accountId, r.status, r.grants.join(',') || '-', r.device ? r.device.fingerprint.slice(0, 12) : '-',
    r.lastCheck?.at ?? '-', usage || '0', r.expires ?? '-', r.label,
  ].join('\t');
}

function wholeNumber(args: Args, name: string): number | undefined {
  const text = stringFlag(args, name);
  if (text === undefined) return undefined;
  if (!/^\d{1,10}$/.test(text)) throw new UsageError(`--${name}: a whole number`);
  return Number(text);
}

/** The administrator sees the whole reason, paths and fix included (the licence line's text leaves them out). */
async function whyNoCommand(packageFile: PackageFile, view: LicenceView): Promise<string> {
  return packageFile.get().then(() => view.installUnavailable ?? 'the device package is unavailable', (err: Error) => err.message);
}
