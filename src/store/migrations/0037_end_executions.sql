-- The end of a batch of executions in one call (src/execution/recorder.ts), instead of a transaction of
-- BEGIN, three to five statements and COMMIT: on PGlite each was a message holding its only connection while
-- the next run waited to be created or started; on PostgreSQL each was a round trip.
--
-- p_transitions holds the state machine's transitions the end uses (src/runs/state-machine.ts, passed by the
-- caller, as ay_start_executions takes `start`): {"succeed": {"to": ..., "from": [...]}, "fail": ...,
-- "error": ..., "continue": ...}. Per execution, p_events names the one its outcome applies (NULL: none, the
-- run is left as it is). The columns each event sets are those of applyRunEventMany (src/runs/sql.ts).
--
-- In order, each statement seeing the previous ones (and, on PostgreSQL, what others committed meanwhile):
-- 1. the executions that still hold their lease are ended (locked before their runs, as the reaper does);
-- 2. their runs move by their event, a compare-and-set on the state and on the execution still being the
--    run's current one, their usage added (p_usages: amounts to add per key, NULL for none);
-- 3. a run that moved while a follow-up waited that its execution did not consume is queued again
--    (`continue`). A statement of its own on purpose: it sees a follow-up committed while 2 waited for the
--    run's row lock (one statement would read with the snapshot taken before the wait).
-- Answers the runs that moved, as they are at the end, and whether they were queued again.
CREATE OR REPLACE FUNCTION ay_end_executions(
  p_execution_ids text[], p_run_ids text[], p_outcomes text[], p_exit_codes integer[], p_sessions text[],
  p_workspaces text[], p_events text[], p_messages jsonb[], p_usages jsonb[], p_transitions jsonb)
RETURNS TABLE (run jsonb, requeued boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
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
    WHERE e.id = x.id AND e.ended_at IS NULL
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
