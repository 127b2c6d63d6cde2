-- The team's active runs counted by state (GET /run-counts, the console's overview) in one grouped statement
-- that reads this index only: it holds just the runs in an active state, however many finished runs the team
-- has, and an index-only scan of it needs no row once the table's visibility map is set (autovacuum, or the
-- maintenance loop under PGlite).
CREATE INDEX runs_team_active_state ON runs (team_id, state)
  WHERE state IN ('QUEUED', 'PENDING', 'CLAIMED', 'INPROGRESS', 'BLOCKED');
