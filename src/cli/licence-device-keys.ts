// face-check licence device-key create|list|revoke: the device API keys of a licence line, from the command
// line (the administrator's: any account). A key is printed once; its device accepts it from its next check.
import fs from 'node:fs';
import { isRole, ROLES } from '../domain/roles';
import { DeviceKeyService, type DeviceKeyRequest } from '../licensing/cloud/licence-device-keys';
import type { LicenceService } from '../licensing/cloud/licences';
import type { ErrorCatalog } from '../errors';
import type { AsyncStore } from '../storage/interfaces';
import { stringFlag, UsageError, type Args, type Io } from './args';

export const DEVICE_KEY_USAGE = `  face-check licence device-key create [--config <file.ini>] <licenceId> [--role ${ROLES.join('|')}] [--label <text>]
                                      [--signing | --public-key <file.pem>]
  face-check licence device-key list [--config <file.ini>] <licenceId>
  face-check licence device-key revoke [--config <file.ini>] <licenceId> <keyId>`;

const ANY_ACCOUNT = { anyAccount: true } as const;

export async function deviceKeyCommand(args: Args, io: Io, deps: { store: AsyncStore; errors: ErrorCatalog; licences: LicenceService }): Promise<number> {
  const [, , action, ...rest] = args.positional;
  const keys = new DeviceKeyService({ store: deps.store, errors: deps.errors, now: () => new Date(), licences: deps.licences });
  const ids = (n: number, what: string) => {
    if (rest.length !== n) throw new UsageError(`licence device-key ${action} needs ${what}`);
    return rest;
  };
  switch (action) {
    case 'create': {
      const [licenceId] = ids(1, 'one licenceId (see licence list)');
      const role = stringFlag(args, 'role') ?? 'full';
      if (!isRole(role)) throw new UsageError(`--role: one of ${ROLES.join(', ')}`);
      const request: DeviceKeyRequest = { role, label: stringFlag(args, 'label') ?? '' };
      const file = stringFlag(args, 'public-key');
      if (args.flags.get('signing') === true && file !== undefined) throw new UsageError('--signing or --public-key, not both');
      if (args.flags.get('signing') === true) request.signing = true;
      if (file !== undefined) {
        try {
          request.publicKey = fs.readFileSync(file, 'utf8');
        } catch (err) {
          throw new UsageError(`--public-key: ${(err as Error).message}`);
        }
      }
      const created = await keys.create(ANY_ACCOUNT, licenceId, request);
      io.out(`created device key ${created.keyId} on licence ${licenceId} (role ${created.role}${created.signing ? ', signs its requests' : ''})`);
      io.out(`Api-Key: ${created.key}`);
      if (created.signingKey) io.out(`signing_key (RSA-2048 private key, PKCS#8 PEM):\n${created.signingKey.trimEnd()}`);
      io.out(created.signingKey ? 'the key and the signing_key are shown only this once' : 'the key is shown only this once');
      io.out('the licence\'s device accepts it from its next licence check');
      return 0;
    }
    case 'list': {
      const [licenceId] = ids(1, 'one licenceId (see licence list)');
      io.out(['keyId', 'role', 'created', 'revoked', 'signing', 'label'].join('\t'));
      for (const k of await keys.list(ANY_ACCOUNT, licenceId)) {
        io.out([k.keyId, k.role, k.created, k.revoked ?? '-', k.signing ? 'yes' : 'no', k.label].join('\t'));
      }
      return 0;
    }
    case 'revoke': {
      const [licenceId, keyId] = ids(2, 'a licenceId and a keyId (see licence device-key list)');
      const view = await keys.revoke(ANY_ACCOUNT, licenceId, keyId);
      io.out(`revoked device key ${view.keyId} of licence ${licenceId}: its device refuses it from its next licence check`);
      return 0;
    }
    default:
      throw new UsageError(`licence device-key: unknown action ${action ?? '(none)'} (create, list or revoke)`);
  }
}
