// What `face-check serve` starts before the rest of the program is loaded (bin/face-check.js calls it
// first; loading the program's modules takes from ~0.1 s here to several on a board): the kernel reads the
// galleries' snapshot files meanwhile (src/matching/snapshot/read-ahead.ts). Light on purpose: the
// configuration and the addon only. Any failure here is left to the start proper, which reports it.
import { configOf, parseArgs } from '../cli/args';
import { startSnapshotReadAhead } from '../matching/snapshot/read-ahead';

/** For `serve` with an LMDB store: starts reading the store's snapshot files; otherwise nothing. */
export function beginEarlyStart(argv: string[]): void {
  try {
    const args = parseArgs(argv);
    if (args.positional[0] !== 'serve' || args.flags.get('help')) return;
    const config = configOf(args);
    if (config.storage.backend === 'lmdb' && config.index.snapshot !== false) startSnapshotReadAhead(config.storage.path);
  } catch {
    // a bad command line or ini: the start proper says what is wrong
  }
}
