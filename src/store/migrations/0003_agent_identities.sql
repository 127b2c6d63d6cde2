-- Agent identities (`/agent/identities`): service-account-like principals that runs can execute as, and the
-- executing principal of each run.

CREATE TABLE agent_identities (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  -- The service account the identity acts as; deleting the identity deletes it and its API keys.
  principal_id text NOT NULL UNIQUE REFERENCES principals(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- The optional members newer clients send (description, prompt, skills, worker_host, ...), answered back.
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX agent_identities_team ON agent_identities (team_id, created_at, id);

-- Who a run executes as: the agent identity named at creation, otherwise its creator.
ALTER TABLE runs ADD COLUMN executor_id text;
ALTER TABLE runs ADD COLUMN executor_type text;
ALTER TABLE runs ADD COLUMN executor_name text;
CREATE INDEX runs_team_executor ON runs (team_id, executor_id, updated_at DESC, id DESC);

-- Artifact look-ups by uid (`GET /agent/artifacts/{uid}`) and the `artifact_type` list filter.
CREATE INDEX runs_artifacts ON runs USING gin (artifacts jsonb_path_ops);
