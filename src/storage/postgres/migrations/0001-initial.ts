// Schema 1: everything the service stores, as the LMDB store keeps it (src/storage/*.ts), plus what one
// process keeps in memory today and several nodes must share (the replay cache, the sign-in throttle,
// shared secrets). Columns named sealed_* hold AES-256-GCM values sealed under the data key
// (src/storage/crypto/sealer.ts; the place in the AAD is given beside each). Days are 'YYYY-MM-DD' text in
// UTC: pg would turn a `date` into a local-time JavaScript Date.
import type { Migration } from './migration';

export const INITIAL_SCHEMA: Migration = {
  version: 1,
  name: 'initial schema',
  sql: `
-- The wrapped data key (and a key being rotated in), as LMDB's meta database holds them.
CREATE TABLE meta (
  key text PRIMARY KEY,
  value bytea NOT NULL
);

-- One row per person. sealed_template: float32 little-endian, place ["person-templates", account, person,
-- model]; sealed_image: the client's image, place ["images", account, person] (as in LMDB).
CREATE TABLE persons (
  account_id text NOT NULL,
  person_id text NOT NULL,
  created timestamptz NOT NULL,
  updated timestamptz NOT NULL,
  model_id text NOT NULL,
  sealed_template bytea NOT NULL,
  sealed_image bytea NOT NULL,
  PRIMARY KEY (account_id, person_id)
);
-- The gallery rebuild reads one model's templates account by account.
CREATE INDEX persons_by_model ON persons (model_id, account_id, person_id);

-- Every person write appends here in its own transaction; seq order is commit order (./change-log.ts).
CREATE TABLE person_changes (
  seq bigserial PRIMARY KEY,
  account_id text NOT NULL,
  person_id text NOT NULL,
  op text NOT NULL CHECK (op IN ('create', 'replace', 'template', 'remove')),
  model_id text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);

-- Each account's last change, kept however far the log is pruned (a gallery snapshot of an account that
-- has not changed since stays valid; the account lock's fence reads it).
CREATE TABLE change_heads (
  account_id text PRIMARY KEY,
  seq bigint NOT NULL
);

CREATE TABLE accounts (
  account_id text PRIMARY KEY,
  email text NOT NULL UNIQUE,
  password_hash text NOT NULL,
  role text NOT NULL,
  plan text NOT NULL,
  created timestamptz NOT NULL,
  updated timestamptz NOT NULL
);

-- By the SHA-256 of the key; the key itself is never stored.
CREATE TABLE api_keys (
  key_sha256 text PRIMARY KEY,
  key_id text NOT NULL,
  account_id text NOT NULL,
  role text NOT NULL,
  label text NOT NULL,
  created timestamptz NOT NULL,
  revoked timestamptz,
  signing_public_key text,
  last_used timestamptz
);
CREATE INDEX api_keys_by_key_id ON api_keys (key_id);

-- By the SHA-256 of the session token.
CREATE TABLE sessions (
  token_sha256 text PRIMARY KEY,
  account_id text NOT NULL,
  created timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  expires timestamptz NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);

-- By the SHA-256 of the normalised code.
CREATE TABLE activation_codes (
  code_sha256 text PRIMARY KEY,
  code_id text NOT NULL,
  plan text NOT NULL,
  created timestamptz NOT NULL,
  expires timestamptz NOT NULL,
  used_at timestamptz,
  used_by_account text,
  used_for_licence text
);

-- sealed_key: the licence key, place ["licences", licence id] (as in LMDB); key_sha256 is the check-in's index.
CREATE TABLE licences (
  licence_id text PRIMARY KEY,
  account_id text NOT NULL,
  label text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'revoked')),
  grants jsonb NOT NULL,
  limits jsonb NOT NULL,
  expires timestamptz,
  created timestamptz NOT NULL,
  updated timestamptz NOT NULL,
  revoked timestamptz,
  key_sha256 text NOT NULL UNIQUE,
  sealed_key bytea NOT NULL,
  device jsonb,
  last_check jsonb
);
CREATE INDEX licences_by_account ON licences (account_id, created);

CREATE TABLE licence_usage (
  licence_id text NOT NULL,
  day text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  operation text NOT NULL,
  requests bigint NOT NULL,
  PRIMARY KEY (licence_id, day, operation)
);

CREATE TABLE key_usage (
  key_id text NOT NULL,
  day text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  requests bigint NOT NULL,
  PRIMARY KEY (key_id, day)
);

CREATE TABLE quota (
  account_id text NOT NULL,
  day text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  used integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (account_id, day)
);

-- sealed_private_key: PEM, place ["service-keys", name] (as in LMDB).
CREATE TABLE service_keys (
  name text PRIMARY KEY,
  sealed_private_key bytea NOT NULL,
  public_key text NOT NULL,
  created timestamptz NOT NULL
);

-- Accepted request signatures (by SHA-256) until they leave the timestamp window.
CREATE TABLE request_signatures (
  signature_sha256 bytea PRIMARY KEY,
  expires timestamptz NOT NULL
);
CREATE INDEX request_signatures_by_expiry ON request_signatures (expires);

-- Failed (or still running) sign-in attempts per throttle key (account e-mail, client address).
CREATE TABLE sign_in_failures (
  id bigserial PRIMARY KEY,
  key text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX sign_in_failures_by_key ON sign_in_failures (key, at);
CREATE INDEX sign_in_failures_by_time ON sign_in_failures (at);

-- Small settings every node shares. Secrets are sealed (place ["settings", name]), others plain UTF-8.
CREATE TABLE settings (
  name text PRIMARY KEY,
  value bytea NOT NULL,
  sealed boolean NOT NULL
);
`,
};
