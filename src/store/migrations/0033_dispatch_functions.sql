-- Dispatch queries as functions: planned once per connection (a generic plan), not on every claim, and the
-- candidate choice and the row locks in one round trip. They lock (FOR UPDATE SKIP LOCKED) the queued runs
-- to claim, best first, inside the caller's transaction; the caller moves them through the state machine.

-- The service's executors: per team oldest first; teams interleaved by active runs plus place in their
-- queue, ties to the team served least recently. Runs of Kubernetes-executed factories are the operator's.
CREATE OR REPLACE FUNCTION ay_lock_service_runs(p_harnesses text[], p_limit integer)
RETURNS TABLE (out_id text, out_harness text, out_attempt integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH RECURSIVE queued_teams(team_id) AS (
    (SELECT q.team_id FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL ORDER BY q.team_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.team_id FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL AND q.team_id > t.team_id
            ORDER BY q.team_id LIMIT 1)
    FROM queued_teams t WHERE t.team_id IS NOT NULL
  ),
  active AS (
    SELECT a.team_id, count(*)::int AS n FROM runs a WHERE a.state IN ('CLAIMED', 'INPROGRESS') GROUP BY a.team_id
  ),
  candidates AS (
    SELECT c.id, c.team_id, c.created_at,
      row_number() OVER (PARTITION BY c.team_id ORDER BY c.created_at, c.id) AS place,
      (SELECT max(e.claimed_at) FROM executions e WHERE e.team_id = t.team_id) AS served_at
    FROM queued_teams t CROSS JOIN LATERAL (
      SELECT q.id, q.team_id, q.created_at FROM runs q
      WHERE q.team_id = t.team_id AND q.state = 'QUEUED' AND q.worker_host IS NULL
        AND coalesce(nullif(lower(q.config->'harness'->>'type'), ''), 'oz') = ANY(p_harnesses)
        AND (q.factory_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = q.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'))
      ORDER BY q.created_at, q.id
      LIMIT p_limit
    ) c
    WHERE t.team_id IS NOT NULL
  ),
  ranked AS (
    SELECT c.id, coalesce(a.n, 0) + c.place AS turn, c.served_at, c.created_at
    FROM candidates c LEFT JOIN active a ON a.team_id = c.team_id
  )
  SELECT r.id, r.config->'harness'->>'type', (SELECT count(*)::int + 1 FROM executions x WHERE x.run_id = r.id)
  FROM runs r JOIN ranked k ON k.id = r.id
  WHERE r.state = 'QUEUED'
  ORDER BY k.turn, k.served_at NULLS FIRST, k.created_at, r.id
  LIMIT p_limit
  FOR UPDATE OF r SKIP LOCKED;
END
$$;

-- A self-hosted worker: the team's queued runs whose worker_host is its ID, oldest first.
CREATE OR REPLACE FUNCTION ay_lock_worker_runs(p_team text, p_worker text, p_harnesses text[], p_limit integer)
RETURNS TABLE (out_id text, out_harness text, out_attempt integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT r.id, r.config->'harness'->>'type', (SELECT count(*)::int + 1 FROM executions x WHERE x.run_id = r.id)
  FROM runs r
  WHERE r.team_id = p_team AND r.worker_host = p_worker AND r.state = 'QUEUED'
    AND coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') = ANY(p_harnesses)
  ORDER BY r.created_at, r.id
  LIMIT p_limit
  FOR UPDATE OF r SKIP LOCKED;
END
$$;

-- Claims locked runs (the rows a lock function above returned in this statement): QUEUED → CLAIMED with the
-- transition the caller passes (the state machine's `claim`, as runEventSql in src/runs/sql.ts sets it),
-- their executions with their leases, and what their plans need. Kept in one function so PostgreSQL plans it
-- once per connection.
CREATE OR REPLACE FUNCTION ay_claim_locked(
  p_ids text[], p_spellings text[], p_attempts integer[], p_execution_ids text[],
  p_harness_spellings text[], p_harness_types text[], p_executor text, p_worker text, p_lease_ms integer,
  p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH x AS (
    SELECT u.id, u.execution_id, u.attempt, h.type AS harness, u.ord
    FROM unnest(p_ids, p_spellings, p_attempts, p_execution_ids) WITH ORDINALITY AS u(id, spelling, attempt, execution_id, ord)
    JOIN unnest(p_harness_spellings, p_harness_types) AS h(spelling, type) ON h.spelling = coalesce(nullif(lower(u.spelling), ''), 'oz')
  ), moved AS (
    UPDATE runs r SET state = p_to, updated_at = ay_now(), execution_id = x.execution_id, status_message = NULL
    FROM x WHERE r.id = x.id AND r.state = ANY(p_from) RETURNING r.*
  ), created AS (
    INSERT INTO executions (id, run_id, team_id, attempt, executor, worker_id, harness, lease_expires_at)
    SELECT x.execution_id, m.id, m.team_id, x.attempt, p_executor, p_worker, x.harness, ay_now() + p_lease_ms * interval '1 millisecond'
    FROM moved m JOIN x ON x.id = m.id
    RETURNING 1
  )
  SELECT to_jsonb(m), x.execution_id, x.attempt, x.harness,
    (SELECT coalesce(json_agg(json_build_object('id', e.id, 'agent_session_id', e.agent_session_id, 'started', e.started_at IS NOT NULL)
       ORDER BY e.attempt DESC), '[]'::json) FROM executions e WHERE e.run_id = m.id),
    (SELECT coalesce(json_agg(json_build_object('id', f.id, 'message', f.message) ORDER BY f.created_at, f.id), '[]'::json)
       FROM run_followups f WHERE f.run_id = m.id AND f.consumed_by_execution IS NULL),
    (SELECT coalesce(json_agg(json_build_object('file_name', a.file_name, 'mime_type', a.mime_type, 'data', encode(a.data, 'base64'))
       ORDER BY a.file_name), '[]'::json) FROM run_attachments a WHERE a.run_id = m.id)
  FROM moved m JOIN x ON x.id = m.id
  ORDER BY x.ord;
END
$$;

-- Starts executions: those still holding their lease are marked started (locked before their runs, as the
-- reaper locks them), their runs moved CLAIMED → INPROGRESS with the transition the caller passes (the state
-- machine's `start`, guarded by the run's current execution), and the follow-ups in their prompts consumed.
-- Answers the runs that moved.
CREATE OR REPLACE FUNCTION ay_start_executions(
  p_run_ids text[], p_execution_ids text[], p_workspaces text[], p_leases integer[], p_messages jsonb[],
  p_followup_ids text[], p_followup_executions text[], p_to text, p_from text[])
RETURNS TABLE (run_id text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest(p_run_ids, p_execution_ids, p_workspaces, p_leases, p_messages) AS i(id, execution_id, workspace, lease, message)
  ), live AS (
    UPDATE executions e SET started_at = ay_now(), workspace = i.workspace, heartbeat_at = ay_now(),
      lease_expires_at = ay_now() + i.lease * interval '1 millisecond'
    FROM input i WHERE e.id = i.execution_id AND e.ended_at IS NULL RETURNING e.id
  ), x AS (
    SELECT i.id, i.execution_id, i.message FROM input i JOIN live l ON l.id = i.execution_id
  ), moved AS (
    UPDATE runs r SET state = p_to, updated_at = ay_now(), started_at = coalesce(r.started_at, ay_now()), status_message = x.message
    FROM x WHERE r.id = x.id AND r.state = ANY(p_from) AND r.execution_id = x.execution_id
    RETURNING r.id, r.execution_id
  ), consumed AS (
    UPDATE run_followups f SET consumed_by_execution = c.execution_id, consumed_at = ay_now()
    FROM unnest(p_followup_ids, p_followup_executions) AS c(id, execution_id) JOIN moved m ON m.execution_id = c.execution_id
    WHERE f.id = c.id AND f.consumed_by_execution IS NULL RETURNING 1
  )
  SELECT m.id FROM moved m;
END
$$;
