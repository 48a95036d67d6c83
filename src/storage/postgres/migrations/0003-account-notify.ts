// Schema 3: every write to the accounts table notifies ACCOUNT_CHANNEL with the account's id, whoever makes
// it (a node, `face-check migrate`, an operator's own SQL), so a node that caches accounts' plans to meter
// unlimited requests without a round trip (../meter-caches.ts) drops its entry when the other nodes'
// transactions commit. A TRUNCATE notifies '*' (every account).
import { ACCOUNT_CHANNEL } from '../accounts';
import type { Migration } from './migration';

export const ACCOUNT_NOTIFY: Migration = {
  version: 3,
  name: 'accounts notify their writes',
  sql: `
CREATE FUNCTION face_check_account_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'STATEMENT' THEN
    PERFORM pg_notify('${ACCOUNT_CHANNEL}', '*');
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('${ACCOUNT_CHANNEL}', OLD.account_id);
  ELSE
    PERFORM pg_notify('${ACCOUNT_CHANNEL}', NEW.account_id);
    IF TG_OP = 'UPDATE' AND NEW.account_id IS DISTINCT FROM OLD.account_id THEN
      PERFORM pg_notify('${ACCOUNT_CHANNEL}', OLD.account_id);
    END IF;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER accounts_written AFTER INSERT OR UPDATE OR DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION face_check_account_written();
CREATE TRIGGER accounts_truncated AFTER TRUNCATE ON accounts
  FOR EACH STATEMENT EXECUTE FUNCTION face_check_account_written();
`,
};
