-- Factories, their applies, managed secrets, and the live state that applies produce: webhooks and automations.

CREATE TABLE secrets (
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- AES-256-GCM: iv (12 bytes) || tag (16 bytes) || ciphertext, under the instance master key.
  ciphertext bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (team_id, name)
);

CREATE TABLE factories (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- {type: git|directory|managed|kubernetes, url?, branch?, path?, poll_interval_seconds?, credentials_secret?}
  source jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'applied', 'failed')),
  applied_revision text,
  attempted_revision text,
  applied_at timestamptz,
  attempted_at timestamptz,
  -- Diagnostics of the last attempted revision: [{file, line, column, path, code, message, severity}]
  errors jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- The parsed desired state of the applied revision (factory settings, agents, runners, skills...).
  definition jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX factories_team_name ON factories (team_id, name) WHERE deleted_at IS NULL;

-- The files of each applied revision, so that GET /factories/{id}/definition answers without the source.
CREATE TABLE factory_files (
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  path text NOT NULL,
  content text NOT NULL,
  PRIMARY KEY (factory_id, path)
);

CREATE TABLE factory_applies (
  id text PRIMARY KEY,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  revision text NOT NULL,
  commit_author text,
  commit_message text,
  result text NOT NULL CHECK (result IN ('applied', 'unchanged', 'failed')),
  errors jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- [{kind: webhook|automation|..., name, action: created|updated|deleted|renamed, uid?, detail?}]
  changes jsonb NOT NULL DEFAULT '[]'::jsonb,
  started_at timestamptz NOT NULL DEFAULT ay_now(),
  finished_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX factory_applies_factory ON factory_applies (factory_id, started_at DESC, id DESC);

CREATE TABLE webhooks (
  uid text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  name text NOT NULL,
  file text NOT NULL,
  auth_mode text NOT NULL CHECK (auth_mode IN ('token', 'url_token', 'signature')),
  signature_scheme text,
  secret_name text,
  -- The secret value in force, encrypted; taken from the managed secret when the definition applies
  -- (spec rule 5), or set by rotation. NULL: no secret yet (deliveries are rejected as auth failures).
  secret_ciphertext bytea,
  secret_version integer NOT NULL DEFAULT 1,
  delivery_id_header text,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX webhooks_factory_name ON webhooks (factory_id, name) WHERE deleted_at IS NULL;
CREATE INDEX webhooks_team ON webhooks (team_id);

CREATE TABLE automations (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  name text NOT NULL,
  file text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  prompt text NOT NULL,
  agent text,
  -- Resolved execution settings for the runs it starts (model/harness, runner, workerHost, secrets, mcpServers...).
  config jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- As in the definition file: [{provider, event, filter?, schedule?}]
  triggers jsonb NOT NULL DEFAULT '[]'::jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX automations_factory_name ON automations (factory_id, name) WHERE deleted_at IS NULL;

-- One row per (automation, webhook) webhook trigger, for the ingress to find subscribers quickly.
CREATE TABLE automation_webhook_triggers (
  automation_id text NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
  webhook_uid text NOT NULL,
  trigger_index integer NOT NULL,
  payload_filter jsonb,
  PRIMARY KEY (automation_id, trigger_index)
);
CREATE INDEX automation_webhook_triggers_webhook ON automation_webhook_triggers (webhook_uid);
