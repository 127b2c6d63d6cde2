-- ay_end_executions (migration 0037) again, with the same body but for one predicate, and with its plans
-- pinned. Every statement in it looks rows up by primary key (run_followups by run) for a batch of at most a
-- few hundred, so nested loops over index lookups are the right plans at any table size, and the planner is
-- told so. Its plans are generic, made at the first call of a session, and PGlite never analyzes (no
-- autovacuum), so nothing makes it plan again: left to itself, a first call on a young database (the first
-- runs of a new server, every test and benchmark) fixed sequential scans of runs and hash joins for the life
-- of the process (PGlite, 5,000 runs: 3.9 ms a call instead of 0.6), and ended executions by a full scan of
-- the partial index of live executions once per execution of the batch (128 at once: 15 ms instead of 2) —
-- hence `(e.ended_at IS NULL) IS TRUE`, the same test, which that index cannot answer.
CREATE OR REPLACE FUNCTION ay_end_executions(
  p_execution_ids text[], p_run_ids text[], p_outcomes text[], p_exit_codes integer[], p_sessions text[],
  p_workspaces text[], p_events text[], p_messages jsonb[], p_usages jsonb[], p_transitions jsonb)
RETURNS TABLE (run jsonb, requeued boolean)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
#variable_conflict use_column
DECLARE
  v_ended text[];
  v_moved text[];
  v_requeued text[];
BEGIN
  WITH ended AS (
    UPDATE executions e SET ended_at = ay_now(), outcome = x.outcome, exit_code = x.exit_code,
      agent_session_id = coalesce(x.session, e.agent_session_id), workspace = coalesce(x.workspace, e.workspace)
    FROM unnest(p_execution_ids, p_outcomes, p_exit_codes, p_sessions, p_workspaces) AS x(id, outcome, exit_code, session, workspace)
    WHERE e.id = x.id AND (e.ended_at IS NULL) IS TRUE
    RETURNING e.id
  )
  SELECT array_agg(ended.id) INTO v_ended FROM ended;
  IF v_ended IS NULL THEN
    RETURN;
  END IF;

  WITH moved AS (
    UPDATE runs r SET state = p_transitions->x.event->>'to', updated_at = ay_now(), finished_at = ay_now(),
      status_message = x.message,
      request_usage = CASE WHEN x.usage IS NULL THEN r.request_usage ELSE coalesce(r.request_usage, '{}'::jsonb) || coalesce((
        SELECT jsonb_object_agg(u.key,
          CASE WHEN jsonb_typeof(r.request_usage->u.key) = 'number' THEN (r.request_usage->>u.key)::numeric ELSE 0 END + u.value::numeric)
        FROM jsonb_each_text(x.usage) AS u(key, value)), '{}'::jsonb) END
    FROM unnest(p_execution_ids, p_run_ids, p_events, p_messages, p_usages) AS x(execution_id, id, event, message, usage)
    WHERE x.execution_id = ANY (v_ended) AND x.event IS NOT NULL
      AND r.id = x.id AND r.execution_id = x.execution_id AND (p_transitions->x.event->'from') ? r.state
    RETURNING r.id
  )
  SELECT array_agg(moved.id) INTO v_moved FROM moved;
  IF v_moved IS NULL THEN
    RETURN;
  END IF;

  WITH again AS (
    UPDATE runs r SET state = p_transitions->'continue'->>'to', updated_at = ay_now(), finished_at = NULL, status_message = NULL
    WHERE r.id = ANY (v_moved) AND (p_transitions->'continue'->'from') ? r.state
      AND EXISTS (SELECT 1 FROM run_followups f WHERE f.run_id = r.id AND f.consumed_by_execution IS NULL)
    RETURNING r.id
  )
  SELECT array_agg(again.id) INTO v_requeued FROM again;

  RETURN QUERY SELECT to_jsonb(r), r.id = ANY (coalesce(v_requeued, '{}'::text[])) FROM runs r WHERE r.id = ANY (v_moved);
END
$$;
