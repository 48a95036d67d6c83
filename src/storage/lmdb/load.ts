// lmdb-js, loaded once for the program. lmdb and msgpackr find their prebuilt binaries through
// node-gyp-build-optional-packages, which asks detect-libc whether this Linux runs musl; detect-libc loads
// child_process (and with it net, dgram and the stream machinery, CPU paid at every start) only
// to be able to run `getconf` should its other probes fail. The addon knows the answer: it was built against
// this process's C library (../native-storage.ts). It is named through LIBC, the variable those packages
// read before probing, for the duration of the first require only; where the addon is not built, or says
// nothing, or LIBC is set already, lmdb loads as it always does.
import type * as Lmdb from 'lmdb';

import { addonLibc } from '../native-storage';

function load(): typeof Lmdb {
  const libc = process.platform === 'linux' && process.env.LIBC === undefined ? addonLibc() : undefined;
  if (!libc) return require('lmdb') as typeof Lmdb;  // eslint-disable-line @typescript-eslint/no-require-imports
  process.env.LIBC = libc;
  try {
    return require('lmdb') as typeof Lmdb;  // eslint-disable-line @typescript-eslint/no-require-imports
  } finally {
    delete process.env.LIBC;
  }
}

export const lmdb = load();
