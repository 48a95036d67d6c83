// Who reads and opens the snapshots at a start: natively (Collection.importSealed: pread and AES-256-GCM on
// every core straight into the index's rows, the process's own OpenSSL looked up at run time) or in
// JavaScript (./read.ts and ./unseal.ts, then importCodes group by group).
import { similarityIndex } from '../../index/similarity-index';

export type Unsealer = 'native' | 'js';

/** The unsealer a restore uses: `requested`, else FACE_CHECK_SNAPSHOT_UNSEAL, else native where available. */
export function chooseUnsealer(requested?: Unsealer): Unsealer {
  const env = process.env.FACE_CHECK_SNAPSHOT_UNSEAL;
  const want = requested ?? (env === 'js' ? 'js' : 'native');
  return want === 'native' && similarityIndex().sealedImport.available ? 'native' : 'js';
}
