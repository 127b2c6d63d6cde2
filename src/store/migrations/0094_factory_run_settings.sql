-- What a claim of a factory's run reads from its applied definition (ay_claim_locked, src/engine/functions.sql),
-- kept beside it so that a claim does not take the whole definition apart: its runners by name, its agents' and
-- automations' `execution` by name, the factory's `secrets` and `integrations`. Stored, and computed again by
-- PostgreSQL whenever the row is written, so it is never out of step with `definition`. The first of several
-- entries of one name wins, as the claim's look-ups in the array did.
CREATE OR REPLACE FUNCTION ay_factory_run_settings(d jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT jsonb_build_object(
    'runners', (
      SELECT coalesce(jsonb_object_agg(e.v->>'name', e.v ORDER BY e.ord DESC) FILTER (WHERE e.v->>'name' IS NOT NULL), '{}')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d->'runners') = 'array' THEN d->'runners' ELSE '[]' END)
        WITH ORDINALITY AS e(v, ord)),
    'agents', (
      SELECT coalesce(jsonb_object_agg(e.v->>'name', e.v->'execution' ORDER BY e.ord DESC)
               FILTER (WHERE e.v->>'name' IS NOT NULL), '{}')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d->'agents') = 'array' THEN d->'agents' ELSE '[]' END)
        WITH ORDINALITY AS e(v, ord)),
    'automations', (
      SELECT coalesce(jsonb_object_agg(e.v->>'name', e.v->'execution' ORDER BY e.ord DESC)
               FILTER (WHERE e.v->>'name' IS NOT NULL), '{}')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d->'automations') = 'array' THEN d->'automations' ELSE '[]' END)
        WITH ORDINALITY AS e(v, ord)),
    'secrets', d->'factory'->'secrets',
    'integrations', d->'factory'->'integrations')
$$;

ALTER TABLE factories ADD COLUMN run_settings jsonb GENERATED ALWAYS AS (ay_factory_run_settings(definition)) STORED;

-- The tally of a factory's runs (migration 0090) is written only when a run ends or its usage changes: a claim
-- or a start fires the trigger no more.
DROP TRIGGER runs_factory_tally ON runs;
CREATE TRIGGER runs_factory_tally AFTER UPDATE OF state, request_usage ON runs FOR EACH ROW
  WHEN (NEW.factory_id IS NOT NULL
        AND ((NEW.state IS DISTINCT FROM OLD.state
              AND NEW.state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED', 'BLOCKED'))
             OR NEW.request_usage IS DISTINCT FROM OLD.request_usage))
  EXECUTE FUNCTION ay_tally_factory_run();
