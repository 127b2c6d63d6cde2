-- Agent runs, their follow-ups, attachments, and idempotency records of run creation.

CREATE TABLE runs (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  title text NOT NULL,
  prompt text NOT NULL,
  state text NOT NULL,
  source text NOT NULL DEFAULT 'API',
  config jsonb NOT NULL DEFAULT '{}'::jsonb,
  config_name text,
  model_id text,
  environment_id text,
  skill_spec text,
  worker_host text,
  creator_id text,
  creator_type text,
  creator_name text,
  creator_email text,
  factory_id text,
  automation_id text,
  delivery_id text,
  schedule_id text,
  parent_run_id text,
  conversation_id text,
  session_id text NOT NULL,
  execution_location text NOT NULL DEFAULT 'REMOTE',
  status_message jsonb,
  artifacts jsonb NOT NULL DEFAULT '[]'::jsonb,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  request_usage jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  started_at timestamptz,
  finished_at timestamptz
);
-- Keyset pagination: one index per sort order, each ending in the id tie-breaker.
CREATE INDEX runs_team_updated ON runs (team_id, updated_at DESC, id DESC);
CREATE INDEX runs_team_created ON runs (team_id, created_at DESC, id DESC);
CREATE INDEX runs_team_state_updated ON runs (team_id, state, updated_at DESC, id DESC);
CREATE INDEX runs_team_state_created ON runs (team_id, state, created_at DESC, id DESC);
CREATE INDEX runs_team_config_name ON runs (team_id, config_name, updated_at DESC, id DESC) WHERE config_name IS NOT NULL;
CREATE INDEX runs_team_creator ON runs (team_id, creator_id, updated_at DESC, id DESC);
CREATE INDEX runs_factory ON runs (factory_id, updated_at DESC, id DESC) WHERE factory_id IS NOT NULL;
CREATE INDEX runs_schedule ON runs (schedule_id, updated_at DESC, id DESC) WHERE schedule_id IS NOT NULL;

CREATE TABLE run_attachments (
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  file_name text NOT NULL,
  mime_type text NOT NULL,
  data bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (run_id, file_name)
);

CREATE TABLE run_followups (
  id text PRIMARY KEY,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  team_id text NOT NULL,
  message text NOT NULL,
  mode text NOT NULL DEFAULT 'normal',
  creator_id text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  consumed_by_execution text,
  consumed_at timestamptz
);
CREATE INDEX run_followups_run ON run_followups (run_id, created_at);

CREATE TABLE run_idempotency_keys (
  team_id text NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (team_id, key)
);
