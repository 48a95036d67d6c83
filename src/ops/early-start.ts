// What `face-check serve` starts before the rest of the program is loaded (bin/face-check.js calls it
// first; loading the program's modules takes from ~0.3 s here to several on a board): the engine loads its
// models on the addon's threads (src/engine/early-engine.ts) and the kernel reads the galleries' snapshot
// files (src/matching/snapshot/read-ahead.ts) meanwhile. Light on purpose: the configuration, the engine and
// the addon only. Any failure here is left to the start proper, which reports it.
import { configOf, parseArgs } from '../cli/args';
import { loadEngineEarly } from '../engine/early-engine';
import { startSnapshotReadAhead } from '../matching/snapshot/read-ahead';

/** For `serve`: starts loading the engine and, with an LMDB store, reading its snapshot files; otherwise nothing. */
export function beginEarlyStart(argv: string[]): void {
  try {
    const args = parseArgs(argv);
    if (args.positional[0] !== 'serve' || args.flags.get('help')) return;
    const config = configOf(args);
    loadEngineEarly();
    if (config.storage.backend === 'lmdb' && config.index.snapshot !== false) startSnapshotReadAhead(config.storage.path);
  } catch {
    // a bad command line or ini: the start proper says what is wrong
  }
}
