-- The factory interface (docs/orchestration.md): run tokens, the questions runs ask, the chat threads that
-- continue runs, and follow-ups deduplicated by the provider message they came from.

-- A run-scoped bearer token per execution, stored only as its SHA-256. Valid while its execution is the run's
-- current one and has not ended (checked against executions and runs, so nothing has to revoke it).
CREATE TABLE run_tokens (
  token_hash text PRIMARY KEY,
  execution_id text NOT NULL UNIQUE REFERENCES executions(id) ON DELETE CASCADE,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  team_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now()
);

-- A question a run asked (`ask_user`): its execution ends BLOCKED with it; an answer resumes the run.
CREATE TABLE run_questions (
  id text PRIMARY KEY,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  execution_id text NOT NULL,
  team_id text NOT NULL,
  question text NOT NULL,
  -- Where it was posted: {"provider": "slack", "channel", "thread_ts"} | {"provider": "github", "repository",
  -- "issue"} | {"provider": "linear", …} | {"provider": "console"}.
  posted_to jsonb NOT NULL,
  asked_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX run_questions_execution ON run_questions (execution_id);
CREATE INDEX run_questions_run ON run_questions (run_id, asked_at DESC);

-- Chat threads (a Slack thread, a GitHub issue or pull request, a Linear issue or agent session) where a run
-- started, replied or asked: a later message there continues the run.
CREATE TABLE run_threads (
  connection_id text NOT NULL,
  thread_key text NOT NULL,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  team_id text NOT NULL,
  provider text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (connection_id, thread_key, run_id)
);
CREATE INDEX run_threads_run ON run_threads (run_id);

-- The active runs of a factory, counted at every dispatch (AGENTYARD_FACTORY_MAX_ACTIVE_RUNS).
CREATE INDEX runs_factory_active ON runs (factory_id)
  WHERE factory_id IS NOT NULL AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS');

-- A chat message that continued a run is one follow-up, however many events carry it (Slack sends a mention
-- in a thread both as app_mention and as message).
ALTER TABLE run_followups ADD COLUMN provider_message_key text;
CREATE UNIQUE INDEX run_followups_provider_message ON run_followups (run_id, provider_message_key)
  WHERE provider_message_key IS NOT NULL;
