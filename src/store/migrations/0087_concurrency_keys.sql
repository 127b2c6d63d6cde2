-- Concurrency keys and a factory's cap on active runs (docs/governance.md, "Concurrency keys"): the key an
-- automation's `concurrency.key` rendered for the run when it fired, the limit in force then, and the newer
-- run that cancelled it (`onNew: cancelRunning`). The claim (src/engine/functions.sql) counts a key's active
-- runs through runs_concurrency_open, a factory's through runs_factory_active (migration 0079).
ALTER TABLE runs ADD COLUMN concurrency_key text, ADD COLUMN concurrency_limit integer, ADD COLUMN superseded_by text;

CREATE INDEX runs_concurrency_open ON runs (factory_id, concurrency_key)
  WHERE concurrency_key IS NOT NULL AND state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS');

-- `maxActiveRuns` of the applied factory.yaml, read by every claim of a factory's run without parsing the definition.
ALTER TABLE factories ADD COLUMN max_active_runs integer GENERATED ALWAYS AS (
  CASE WHEN jsonb_typeof(definition->'factory'->'maxActiveRuns') = 'number'
    THEN least(greatest((definition->'factory'->>'maxActiveRuns')::numeric, 0), 1000000)::integer END) STORED;
