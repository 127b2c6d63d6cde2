-- The hand-off statement of 0035, cheaper (src/execution/hand-off.ts):
-- * the insert is static, planned once per connection: the columns are those of src/runs/sql.ts insertRuns
--   (the hand-off checks at start that insertRuns writes exactly these, and stays off otherwise);
-- * when nothing else is queued for the service's executors and the claim may take every new run, the fair
--   choice between teams (ay_lock_service_runs) can only answer "every new run these executors take": that
--   set is taken directly. Otherwise the usual fair claim runs, as in 0035.

CREATE OR REPLACE FUNCTION ay_create_and_claim_service_runs(
  p_runs jsonb, p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[],
  p_harness_types text[], p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_new text[];
  v_ids text[];
  v_spellings text[];
BEGIN
  WITH inserted AS (
    INSERT INTO runs (
      id, team_id, title, prompt, state, source, config, config_name, model_id, environment_id, skill_spec,
      worker_host, creator_id, creator_type, creator_name, creator_email, factory_id, automation_id,
      delivery_id, schedule_id, parent_run_id, conversation_id, session_id, metadata, executor_id,
      executor_type, executor_name)
    SELECT
      id, team_id, title, prompt, state, source, config, config_name, model_id, environment_id, skill_spec,
      worker_host, creator_id, creator_type, creator_name, creator_email, factory_id, automation_id,
      delivery_id, schedule_id, parent_run_id, conversation_id, session_id, metadata, executor_id,
      executor_type, executor_name
    FROM jsonb_to_recordset(p_runs) AS r(
      id text, team_id text, title text, prompt text, state text, source text, config jsonb, config_name text,
      model_id text, environment_id text, skill_spec text, worker_host text, creator_id text,
      creator_type text, creator_name text, creator_email text, factory_id text, automation_id text,
      delivery_id text, schedule_id text, parent_run_id text, conversation_id text, session_id text,
      metadata jsonb, executor_id text, executor_type text, executor_name text)
    RETURNING id
  )
  SELECT array_agg(id) INTO v_new FROM inserted;
  IF p_limit <= 0 THEN
    RETURN;
  END IF;
  IF p_limit < cardinality(v_new) OR EXISTS (
    SELECT 1 FROM runs q WHERE q.state = 'QUEUED' AND q.worker_host IS NULL AND q.id <> ALL (v_new)
  ) THEN
    RETURN QUERY SELECT * FROM ay_claim_service_runs(p_harnesses, p_limit, p_execution_ids, p_harness_spellings, p_harness_types,
      p_executor, p_lease_ms, p_to, p_from);
    RETURN;
  END IF;
  -- the filters of ay_lock_service_runs; rows inserted by this transaction need no lock (nobody else sees them)
  SELECT array_agg(r.id ORDER BY r.created_at, r.id), array_agg(r.config->'harness'->>'type' ORDER BY r.created_at, r.id)
    INTO v_ids, v_spellings
  FROM runs r
  WHERE r.id = ANY (v_new) AND r.state = 'QUEUED' AND r.worker_host IS NULL
    AND coalesce(nullif(lower(r.config->'harness'->>'type'), ''), 'oz') = ANY (p_harnesses)
    AND (r.factory_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM kubernetes_factories k WHERE k.factory_id = r.factory_id AND k.deleted_at IS NULL AND k.executor = 'kubernetes'));
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  -- new runs: their first execution
  RETURN QUERY SELECT * FROM ay_claim_locked(v_ids, v_spellings, array_fill(1, ARRAY[cardinality(v_ids)]), p_execution_ids,
    p_harness_spellings, p_harness_types, p_executor, NULL, p_lease_ms, p_to, p_from);
END
$$;
