-- Outbound GitHub work that follows from a provider delivery and must survive a crash: fetching a pull
-- request's changed files (for `paths` filters) and the `agentyard/factory-config` check run. Enqueued in the
-- outbox evaluation's transaction, run off the request path by the GitHub job runner (src/integrations/github-jobs.ts).
CREATE TABLE github_jobs (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('pull_files', 'factory_check')),
  team_id text NOT NULL,
  connection_id text NOT NULL REFERENCES integration_connections(id) ON DELETE CASCADE,
  delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  -- The factory a check is for; '' for pull_files.
  factory_id text NOT NULL DEFAULT '',
  -- What the job needs: repository, pull request number, head sha, installation id.
  input jsonb NOT NULL,
  -- pending → done | failed. A claim moves run_after past its lease: a claim lost in a crash is taken again after it.
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  run_after timestamptz NOT NULL DEFAULT ay_now(),
  -- pull_files: {files, truncated}; factory_check: {check_run_id, conclusion}. Kept across attempts.
  result jsonb NOT NULL DEFAULT '{}'::jsonb,
  error text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  finished_at timestamptz
);
CREATE UNIQUE INDEX github_jobs_once ON github_jobs (delivery_id, kind, factory_id);
CREATE INDEX github_jobs_due ON github_jobs (run_after) WHERE state = 'pending';
