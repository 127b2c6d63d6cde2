-- Lists in time order without a single state read (team, state, time) state by state and merge the scans
-- (src/runs/list.ts), so the two time indexes without the state go: two index insertions fewer for every new
-- run and every state change (docs/decisions.md).

DROP INDEX runs_team_updated;
DROP INDEX runs_team_created;
