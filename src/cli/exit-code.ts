// What a command that failed exits with (sysexits codes where one fits), and its one line on stderr. The
// codes systemd's Restart=on-failure acts on: 69 (EX_UNAVAILABLE) the licence server or the database could
// not be reached; 75 (EX_TEMPFAIL) the store is busy; 77 (EX_NOPERM) a licence was refused or its document
// did not verify; 78 (EX_CONFIG) the ini is wrong; anything else 1.
import { ConfigError } from '../config/load';
import { LicenceStartError } from '../licensing/device/device-licence';
import { DatabaseUnavailableError, StoreBusyError } from '../storage/errors';
import type { Io } from './args';

export function failureExitCode(err: unknown, io: Pick<Io, 'err'>): number {
  if (err instanceof LicenceStartError) {
    io.err(`face-check: licence check failed: ${err.message}`);
    return err.kind === 'unreachable' ? 69 : 77;
  }
  if (err instanceof StoreBusyError) {
    io.err(`face-check: ${err.message}`);
    return 75; // try again once the store is free
  }
  if (err instanceof DatabaseUnavailableError) {
    io.err(`face-check: ${err.message}`);
    return 69;
  }
  if (err instanceof ConfigError) {
    io.err(`face-check: configuration error: ${err.message}`);
    return 78;
  }
  io.err(`face-check: ${(err as Error).message}`);
  return 1;
}
