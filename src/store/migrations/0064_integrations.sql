-- Provider connections (GitHub, Slack, Linear), one per team and provider, and the routing index of the
-- automations' provider triggers. A connection's events are logged in webhook_deliveries under the
-- connection's id (webhook_uid) and go through the same outbox as webhook deliveries.

CREATE TABLE integration_connections (
  -- igc_…: the last path segment of the connection's events URL.
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  provider text NOT NULL CHECK (provider IN ('github', 'slack', 'linear')),
  -- The managed-secret names and settings as PUT took them (never a secret value), see src/integrations/model.ts.
  settings jsonb NOT NULL,
  -- Bumped by every PUT: a delivery verified under the previous settings is not accepted.
  secret_version integer NOT NULL DEFAULT 1,
  last_event_at timestamptz,
  last_event text,
  last_error_at timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE UNIQUE INDEX integration_connections_team_provider ON integration_connections (team_id, provider);

-- GitHub App installations, discovered from the events that name them.
CREATE TABLE github_installations (
  connection_id text NOT NULL REFERENCES integration_connections(id) ON DELETE CASCADE,
  installation_id bigint NOT NULL,
  account_login text,
  first_seen_at timestamptz NOT NULL DEFAULT ay_now(),
  last_seen_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (connection_id, installation_id)
);

-- One row per provider trigger of a live automation, and for GitHub per repository of its factory: an event
-- finds its automations by (team, provider, repository) without reading every factory.
CREATE TABLE automation_provider_triggers (
  automation_id text NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
  team_id text NOT NULL,
  factory_id text NOT NULL,
  provider text NOT NULL,
  event text NOT NULL,
  trigger_index integer NOT NULL,
  -- GitHub: lower-case owner/name; '' for Slack and Linear.
  repository text NOT NULL DEFAULT '',
  -- Canonical keys, each {in?, not_in?}.
  filter jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (automation_id, trigger_index, repository)
);
CREATE INDEX automation_provider_triggers_route ON automation_provider_triggers (team_id, provider, repository, event);
CREATE INDEX automation_provider_triggers_factory ON automation_provider_triggers (factory_id);

-- The provider of a connection's delivery (NULL for a custom webhook's); its event header is in `headers`.
ALTER TABLE webhook_deliveries ADD COLUMN provider text;
