-- The whole claim in one function call (lock, then ay_claim_locked), so that nothing of it is planned per
-- call, and a claim that finds nothing to take ends right after the lock query.

CREATE OR REPLACE FUNCTION ay_claim_service_runs(
  p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[], p_harness_types text[],
  p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json)
LANGUAGE plpgsql AS $$
DECLARE
  v_ids text[];
  v_spellings text[];
  v_attempts integer[];
BEGIN
  SELECT array_agg(l.out_id ORDER BY l.ord), array_agg(l.out_harness ORDER BY l.ord), array_agg(l.out_attempt ORDER BY l.ord)
    INTO v_ids, v_spellings, v_attempts
  FROM ay_lock_service_runs(p_harnesses, p_limit) WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord);
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ay_claim_locked(v_ids, v_spellings, v_attempts, p_execution_ids, p_harness_spellings, p_harness_types,
    p_executor, NULL, p_lease_ms, p_to, p_from);
END
$$;

CREATE OR REPLACE FUNCTION ay_claim_worker_runs(
  p_team text, p_worker text, p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[],
  p_harness_types text[], p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json)
LANGUAGE plpgsql AS $$
DECLARE
  v_ids text[];
  v_spellings text[];
  v_attempts integer[];
BEGIN
  SELECT array_agg(l.out_id ORDER BY l.ord), array_agg(l.out_harness ORDER BY l.ord), array_agg(l.out_attempt ORDER BY l.ord)
    INTO v_ids, v_spellings, v_attempts
  FROM ay_lock_worker_runs(p_team, p_worker, p_harnesses, p_limit) WITH ORDINALITY AS l(out_id, out_harness, out_attempt, ord);
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ay_claim_locked(v_ids, v_spellings, v_attempts, p_execution_ids, p_harness_spellings, p_harness_types,
    p_executor, p_worker, p_lease_ms, p_to, p_from);
END
$$;
