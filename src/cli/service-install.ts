// face-check service install: installs face-check as a systemd service with the given ini (src/ops/
// service-install.ts holds the steps). --prefix installs below a folder (a trial or a test root) and only
// prints the steps that need root on the real system. It parses its own options: --prefix is its alone.
import path from 'node:path';
import { installConfigFile, installService, serviceLayout } from '../ops/service-install';
import { UsageError, type Io } from './args';

export const SERVICE_USAGE = '  face-check service install [--prefix <dir>] [--config <file.ini>]';

interface ServiceArgs {
  prefix: string;
  config?: string;
  help: boolean;
}

/** argv after `service`. */
export async function serviceCommand(argv: string[], io: Io): Promise<number> {
  const args = parseServiceArgs(argv);
  if (args.help) {
    io.out(`usage:\n${SERVICE_USAGE}`);
    return 0;
  }
  const layout = serviceLayout(args.prefix);
  if (args.config !== undefined) installConfigFile(path.resolve(args.config), layout, io);
  installService(layout, io);
  return 0;
}

function parseServiceArgs(argv: string[]): ServiceArgs {
  const args: ServiceArgs = { prefix: '/', help: false };
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].startsWith('--') ? argv[i].slice(2).split(/=(.*)/s, 2) : [undefined, undefined];
    if (name === undefined) {
      positional.push(argv[i]);
    } else if (name === 'help') {
      args.help = true;
    } else if (name === 'prefix' || name === 'config') {
      const value = inline ?? argv[++i];
      if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
      if (name === 'prefix') args.prefix = value;
      else args.config = value;
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  if (!args.help && (positional.length !== 1 || positional[0] !== 'install')) {
    throw new UsageError('service: the only subcommand is install');
  }
  return args;
}
