// Schema 6: the client addresses each account signed in from (the latest few per account, ../known-
// addresses.ts), so the sign-in throttle's per-account back-off does not refuse the owner at an address they
// used before, on any node and after a restart; and activation codes that open an account ([accounts]
// registration = activation-code | invitation) beside those that add a licence: purpose says which, email
// binds an invitation to the one address it was sent to. Existing codes are licence codes, as before.
import type { Migration } from './migration';

export const SIGN_IN_ADDRESSES_REGISTRATION_CODES: Migration = {
  version: 6,
  name: 'known sign-in addresses and registration codes',
  sql: `
CREATE TABLE known_sign_in_addresses (
  account_id text NOT NULL,
  address text NOT NULL,
  last_seen timestamptz NOT NULL,
  PRIMARY KEY (account_id, address)
);

ALTER TABLE activation_codes
  ADD COLUMN purpose text NOT NULL DEFAULT 'licence' CHECK (purpose IN ('licence', 'registration')),
  ADD COLUMN email text;
`,
};
