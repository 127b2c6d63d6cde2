-- Worker tokens: what a self-hosted worker connects with instead of a team admin key. A team admin creates one
-- for named worker ids; only its SHA-256 is stored. A worker connected with a token receives its team's runs for
-- those ids, and runs acting as a member (credentialStrategy CREATOR) only when that member created the token.

CREATE TABLE worker_tokens (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- The first characters of the token, to recognise it in a list; never enough to use it.
  prefix text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  worker_ids text[] NOT NULL,
  -- The subject of the team admin key that created it: the worker's registrant.
  created_by text NOT NULL,
  created_by_name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX worker_tokens_team ON worker_tokens (team_id, created_at, id);

-- How a connection was registered: an admin key (`key`, with its id) or a worker token (`token`, with its id).
ALTER TABLE worker_connections ADD COLUMN credential_kind text;
ALTER TABLE worker_connections ADD COLUMN credential_id text;
