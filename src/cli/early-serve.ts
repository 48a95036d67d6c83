// The command line's first step (bin/face-check.js runs it before the rest of the program loads): for
// `serve`, the early start of the configured service begins (../start/early-start.ts); for anything else,
// nothing.
import { beginEarlyStart } from '../start/early-start';
import { configOf, parseArgs } from './args';

export function beginEarlyServe(argv: string[]): void {
  try {
    const args = parseArgs(argv);
    if (args.positional[0] !== 'serve' || args.flags.get('help')) return;
    beginEarlyStart(configOf(args));
  } catch {
    // a bad command line or ini: the start proper says what is wrong
  }
}
