// Accepted request signatures (src/services/request-signing.ts), shared by every node: a signed request
// replayed to another node behind the load balancer is refused there too. A claim is one statement that
// inserts the signature's SHA-256 or, when a row exists, takes it over only if it has expired; so of any
// number of claims of one signature on any nodes, exactly one returns a row while it is live. Expired rows
// are pruned now and then (at most once a PRUNE_INTERVAL_MS per node, off the request's path).
import crypto from 'node:crypto';
import type { ReplayCache } from '../interfaces';
import type { Db } from './pool';

const PRUNE_INTERVAL_MS = 60_000;

export class PgReplayCache implements ReplayCache {
  private lastPrune = 0;

  constructor(private readonly db: Db, private readonly pruneIntervalMs = PRUNE_INTERVAL_MS) {}

  async claim(signature: string, now: Date, until: Date): Promise<boolean> {
    const digest = crypto.createHash('sha256').update(signature, 'utf8').digest();
    const { rows } = await this.db.query(`INSERT INTO request_signatures AS s (signature_sha256, expires) VALUES ($1, $3)
      ON CONFLICT (signature_sha256) DO UPDATE SET expires = EXCLUDED.expires WHERE s.expires <= $2
      RETURNING 1`, [digest, now.toISOString(), until.toISOString()]);
    if (now.getTime() - this.lastPrune >= this.pruneIntervalMs) {
      this.lastPrune = now.getTime();
      this.prune(now).catch(() => undefined);  // housekeeping: a failure here refuses nothing
    }
    return rows.length > 0;
  }

  async prune(now: Date): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM request_signatures WHERE expires <= $1', [now.toISOString()]);
    return rowCount ?? 0;
  }
}
