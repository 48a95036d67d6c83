// Schema 5: the two locked steps of a person write as functions, one round trip each. The change log's append
// (lock, insert, heads, notify: ../change-log.ts) runs while holding the lock that serialises every node's
// person commits, so each round trip saved there is saved for the whole cluster's writes; the account's
// section (../account-lock.ts) takes its lock and reads its fence in one call. A VOLATILE function takes a
// new snapshot for each statement it runs, so what it reads after a lock includes the previous holder's commit.
// The append also returns the log's last seq before its own: the writer's node then hands its follower these
// changes directly when the follower stands exactly there (../change-follower.ts, offer).
import { CHANGE_CHANNEL, PRUNED_THROUGH } from '../change-log';
import { CHANGE_LOG_LOCK } from '../lock-keys';
import type { Migration } from './migration';

export const ONE_ROUND_TRIP_LOCKS: Migration = {
  version: 5,
  name: 'locked steps of a person write in one round trip',
  sql: `
CREATE FUNCTION face_check_append_changes(accounts text[], persons text[], ops text[], models text[])
RETURNS TABLE (change_seq bigint, change_account text, change_person text, change_at timestamptz, previous_seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  previous bigint;
  seqs bigint[];
  owners text[];
  people text[];
  stamps timestamptz[];
BEGIN
  PERFORM pg_advisory_xact_lock(${CHANGE_LOG_LOCK});
  -- The log's last committed seq before these (as lastSeq reads it: a pruned log continues after its
  -- horizon): a follower standing exactly there may take these changes from their writer.
  previous := greatest(coalesce((SELECT max(c.seq) FROM person_changes c), 0),
    coalesce((SELECT convert_from(m.value, 'UTF8')::bigint FROM meta m WHERE m.key = '${PRUNED_THROUGH}'), 0));
  -- clock_timestamp, not now(): the time of the append (just before commit), so "at" grows with seq.
  WITH added AS (
    INSERT INTO person_changes (account_id, person_id, op, model_id, at)
    SELECT c.a, c.p, c.o, c.m, clock_timestamp() FROM unnest(accounts, persons, ops, models) AS c(a, p, o, m)
    RETURNING person_changes.seq, person_changes.account_id, person_changes.person_id, person_changes.at)
  SELECT array_agg(added.seq ORDER BY added.seq), array_agg(added.account_id ORDER BY added.seq),
    array_agg(added.person_id ORDER BY added.seq), array_agg(added.at ORDER BY added.seq)
    INTO seqs, owners, people, stamps FROM added;
  -- Accounts in order, as every writer does: two appends never wait on each other's heads crosswise.
  INSERT INTO change_heads AS h (account_id, seq)
    SELECT x.a, max(x.s) FROM unnest(owners, seqs) AS x(a, s) GROUP BY x.a ORDER BY x.a
    ON CONFLICT (account_id) DO UPDATE SET seq = EXCLUDED.seq;
  PERFORM pg_notify('${CHANGE_CHANNEL}', (SELECT max(x) FROM unnest(seqs) AS x)::text);
  RETURN QUERY SELECT x.s, x.a, x.p, x.t, previous FROM unnest(seqs, owners, people, stamps) AS x(s, a, p, t);
END $$;

CREATE FUNCTION face_check_lock_account(lock_key bigint, account text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(lock_key);
  RETURN coalesce((SELECT h.seq FROM change_heads h WHERE h.account_id = account), 0);
END $$;
`,
};
