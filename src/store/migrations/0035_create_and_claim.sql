-- Direct hand-off (src/execution/hand-off.ts): runs created in a process whose executors have free slots are
-- inserted QUEUED and, in the same statement, claimed by that process's executors the way a wake-up would
-- claim them (ay_claim_service_runs: the fair choice between teams, FOR UPDATE SKIP LOCKED, QUEUED → CLAIMED
-- through the state machine's transition, which the state-event trigger records). The claim may take older
-- runs of other teams instead of the new ones; whatever it leaves stays QUEUED and is announced by the caller.
-- p_runs holds the records of src/runs/sql.ts insertRuns (one object per run, keys = columns of runs), so
-- the inserted columns follow that function: the column list is read from the first record.

CREATE OR REPLACE FUNCTION ay_create_and_claim_service_runs(
  p_runs jsonb, p_harnesses text[], p_limit integer, p_execution_ids text[], p_harness_spellings text[],
  p_harness_types text[], p_executor text, p_lease_ms integer, p_to text, p_from text[])
RETURNS TABLE (run jsonb, execution_id text, attempt integer, harness text, previous json, followups json, attachments json)
LANGUAGE plpgsql AS $$
DECLARE
  v_columns text;
BEGIN
  SELECT string_agg(quote_ident(k), ', ') INTO v_columns FROM jsonb_object_keys(p_runs->0) AS k;
  EXECUTE format('INSERT INTO runs (%1$s) SELECT %1$s FROM jsonb_populate_recordset(NULL::runs, $1)', v_columns) USING p_runs;
  IF p_limit > 0 THEN
    RETURN QUERY SELECT * FROM ay_claim_service_runs(p_harnesses, p_limit, p_execution_ids, p_harness_spellings, p_harness_types,
      p_executor, p_lease_ms, p_to, p_from);
  END IF;
END
$$;
