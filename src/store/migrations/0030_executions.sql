-- Run execution: one row per attempt at executing a run (leases, heartbeats, exit codes), the run's
-- current execution (a guard for every state change an executor makes), and the events of every run with
-- a per-run sequence.

CREATE TABLE executions (
  id text PRIMARY KEY,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  team_id text NOT NULL,
  -- 1 for the first execution of a run, then one more per follow-up that continued it or per requeue.
  attempt integer NOT NULL,
  -- Who holds the lease: `service:<process>` (this server's executors) or `worker:<worker id>/<connection>`.
  executor text NOT NULL,
  worker_id text,
  harness text NOT NULL,
  lease_expires_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL DEFAULT ay_now(),
  claimed_at timestamptz NOT NULL DEFAULT ay_now(),
  started_at timestamptz,
  ended_at timestamptz,
  -- succeeded | failed | error | cancelled | released | lost
  outcome text,
  exit_code integer,
  workspace text,
  -- The agent CLI's own session id (Claude session, Codex thread...), to resume the conversation.
  agent_session_id text
);
CREATE INDEX executions_run ON executions (run_id, attempt);
CREATE INDEX executions_live_lease ON executions (lease_expires_at) WHERE ended_at IS NULL;

ALTER TABLE runs ADD COLUMN execution_id text;
-- The sequence of the run's newest event (run_events.sequence); bumped under the run's row lock.
ALTER TABLE runs ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;

-- Dispatch: the oldest queued runs of a team for the service's executors, and of a worker for a worker.
CREATE INDEX runs_queued_service ON runs (team_id, created_at, id) WHERE state = 'QUEUED' AND worker_host IS NULL;
CREATE INDEX runs_queued_worker ON runs (team_id, worker_host, created_at, id) WHERE state = 'QUEUED' AND worker_host IS NOT NULL;
CREATE INDEX runs_active_team ON runs (team_id) WHERE state IN ('CLAIMED', 'INPROGRESS');

CREATE TABLE run_events (
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  -- 1, 2, 3... per run, gap-free and in commit order (taken under the run's row lock).
  sequence bigint NOT NULL,
  execution_id text,
  -- state | status | message | tool_call | tool_result | usage | result | session | skill | followup | log | error | artifact
  type text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  occurred_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (run_id, sequence)
);

-- Every state change of a run, whoever makes it (executors, the cancel endpoint, follow-ups, the reaper),
-- is recorded as a `state` event in the same statement, so the event stream never misses one.
CREATE OR REPLACE FUNCTION ay_run_state_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state IS DISTINCT FROM OLD.state THEN
    NEW.event_seq := OLD.event_seq + 1;
    INSERT INTO run_events (run_id, sequence, execution_id, type, data)
    VALUES (NEW.id, NEW.event_seq, NEW.execution_id, 'state',
      jsonb_strip_nulls(jsonb_build_object('state', NEW.state, 'previous', OLD.state, 'status_message', NEW.status_message)));
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER runs_state_event BEFORE UPDATE OF state ON runs FOR EACH ROW EXECUTE FUNCTION ay_run_state_event();
