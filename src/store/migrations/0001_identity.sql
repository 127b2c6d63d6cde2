-- Teams, the people and service accounts in them, and their API keys.

-- Timestamps are kept at millisecond precision so that JavaScript dates round-trip exactly (cursors).
CREATE OR REPLACE FUNCTION ay_now() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
  SELECT date_trunc('milliseconds', clock_timestamp())
$$;

CREATE TABLE instance_settings (
  key text PRIMARY KEY,
  value text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT ay_now()
);

CREATE TABLE teams (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT ay_now()
);

CREATE TABLE principals (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('user', 'service_account')),
  display_name text NOT NULL,
  email text,
  created_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX principals_team ON principals (team_id);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  principal_id text NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  role text NOT NULL CHECK (role IN ('admin', 'member')),
  instance_admin boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_team ON api_keys (team_id, created_at DESC);
