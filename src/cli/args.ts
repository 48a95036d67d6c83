// The command line's shared parts: argument parsing, the usage error, the ini a command runs with.
import path from 'node:path';
import { loadConfig } from '../config/load';
import type { Config } from '../config/types';
import { packageRoot } from '../package-root';

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export const stdio: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

export class UsageError extends Error {}

export interface Args {
  positional: string[];
  flags: Map<string, string | true>;
}

const VALUE_FLAGS = new Set([
  'config', 'account', 'role', 'label', 'out', 'frames', 'seconds', 'format', 'public-key', 'new-key-file',
  // accounts, licences, activation codes, the device's installation
  'email', 'password-file', 'plan', 'grants', 'max-persons', 'expires', 'code', 'valid-days', 'server-url',
  'licence-key', 'public-key-sha256', 'root', 'camera', 'port', 'prefix',
  // migrate
  'from', 'to',
  // labelled liveness sessions and their evaluation
  'subject', 'distance-cm', 'note', 'session', 'json', 'html',
  // precision-check
  'photo', 'iterations',
]);
const BOOLEAN_FLAGS = new Set(['all', 'help', 'signing', 'admin']);

export function parseArgs(argv: string[]): Args {
  const args: Args = { positional: [], flags: new Map() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      args.positional.push(a);
      continue;
    }
    const [name, inline] = a.slice(2).split(/=(.*)/s, 2);
    if (BOOLEAN_FLAGS.has(name)) args.flags.set(name, true);
    else if (VALUE_FLAGS.has(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      args.flags.set(name, value);
    } else throw new UsageError(`unknown option --${name}`);
  }
  return args;
}

export function configOf(args: Args): Config {
  const file = args.flags.get('config');
  return loadConfig(typeof file === 'string' ? file : path.join(packageRoot(), 'config', 'default.ini'));
}

/** Account ids: what API keys, persons and licences are filed under. */
export const ACCOUNT_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** A flag's text value, or undefined; a boolean flag given where a value is needed is a usage error. */
export function stringFlag(args: Args, name: string): string | undefined {
  const v = args.flags.get(name);
  if (v === true) throw new UsageError(`--${name} needs a value`);
  return v;
}
