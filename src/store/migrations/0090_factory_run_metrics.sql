-- The Prometheus series per factory and automation (docs/governance.md, "Metrics"): run endings by state,
-- tokens and cost. Whoever moves a factory's run (executors, workers, the cancel endpoint, the reaper, the
-- operator) records a tally row in the same statement, by trigger; each row is a change, never an update of a
-- shared row, so concurrent ends never wait on each other. A scrape folds the tallies into the totals
-- (src/metrics/sql.ts) and reads the totals: one row per factory, automation and state.
CREATE TABLE factory_run_tallies (
  id bigserial PRIMARY KEY,
  factory_id text NOT NULL,
  automation_id text NOT NULL,
  state text NOT NULL,
  ended integer NOT NULL,
  input_tokens numeric NOT NULL,
  output_tokens numeric NOT NULL,
  cost_usd numeric NOT NULL
);

CREATE TABLE factory_run_totals (
  factory_id text NOT NULL,
  -- '' for the runs of no automation (dispatches, API runs of the factory)
  automation_id text NOT NULL,
  state text NOT NULL,
  runs bigint NOT NULL DEFAULT 0,
  input_tokens numeric NOT NULL DEFAULT 0,
  output_tokens numeric NOT NULL DEFAULT 0,
  cost_usd numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (factory_id, automation_id, state)
);

CREATE OR REPLACE FUNCTION ay_usage_number(usage jsonb, key text) RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(usage->key) = 'number' THEN (usage->>key)::numeric ELSE 0 END
$$;

CREATE OR REPLACE FUNCTION ay_tally_factory_run() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ended integer := CASE WHEN NEW.state IS DISTINCT FROM OLD.state
                         AND NEW.state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED', 'BLOCKED') THEN 1 ELSE 0 END;
  d_in numeric := ay_usage_number(NEW.request_usage, 'input_tokens') - ay_usage_number(OLD.request_usage, 'input_tokens');
  d_out numeric := ay_usage_number(NEW.request_usage, 'output_tokens') - ay_usage_number(OLD.request_usage, 'output_tokens');
  d_cost numeric := ay_usage_number(NEW.request_usage, 'inference_cost_usd') - ay_usage_number(OLD.request_usage, 'inference_cost_usd');
BEGIN
  IF ended = 1 OR d_in <> 0 OR d_out <> 0 OR d_cost <> 0 THEN
    INSERT INTO factory_run_tallies (factory_id, automation_id, state, ended, input_tokens, output_tokens, cost_usd)
    VALUES (NEW.factory_id, coalesce(NEW.automation_id, ''), NEW.state, ended, d_in, d_out, d_cost);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER runs_factory_tally AFTER UPDATE OF state, request_usage ON runs FOR EACH ROW
  WHEN (NEW.factory_id IS NOT NULL
        AND (NEW.state IS DISTINCT FROM OLD.state OR NEW.request_usage IS DISTINCT FROM OLD.request_usage))
  EXECUTE FUNCTION ay_tally_factory_run();
