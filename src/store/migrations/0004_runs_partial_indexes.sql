-- Creating a run is the hot path: most runs start without artifacts and execute as their creator, so index
-- only the others (two index insertions fewer per new run; docs/decisions.md, "Performance: how the store is used").

DROP INDEX runs_artifacts;
CREATE INDEX runs_artifacts ON runs USING gin (artifacts jsonb_path_ops) WHERE artifacts <> '[]'::jsonb;

-- executor_* now hold the executing principal only when it differs from the creator (an agent identity).
DROP INDEX runs_team_executor;
UPDATE runs SET executor_id = NULL, executor_type = NULL, executor_name = NULL WHERE executor_id IS NOT DISTINCT FROM creator_id;
CREATE INDEX runs_team_executor ON runs (team_id, executor_id, updated_at DESC, id DESC) WHERE executor_id IS NOT NULL;
