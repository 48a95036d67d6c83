// face-check service install: installs face-check as a systemd service with the given ini (src/ops/
// service-install.ts holds the steps). --prefix installs below a folder (a trial or a test root) and only
// prints the steps that need root on the real system.
import path from 'node:path';
import { installConfigFile, installService, serviceLayout } from '../install/service-install';
import { stringFlag, UsageError, type Args, type Io } from './args';

export const SERVICE_USAGE = '  face-check service install [--prefix <dir>] [--config <file.ini>]';

/** `face-check service install [--prefix DIR] [--config FILE]`. */
export async function serviceCommand(args: Args, io: Io): Promise<number> {
  const [, sub, ...rest] = args.positional;
  if (sub !== 'install' || rest.length > 0) throw new UsageError('service: the only subcommand is install');
  for (const name of args.flags.keys()) {
    if (name !== 'prefix' && name !== 'config') throw new UsageError(`service install: unknown option --${name}`);
  }
  const prefix = stringFlag(args, 'prefix') ?? '/';
  if (prefix === '') throw new UsageError('--prefix needs a value');
  const layout = serviceLayout(prefix);
  const config = stringFlag(args, 'config');
  if (config !== undefined) installConfigFile(path.resolve(config), layout, io);
  installService(layout, io);
  return 0;
}
