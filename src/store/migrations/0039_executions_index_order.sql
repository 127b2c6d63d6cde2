-- Ascending order for the fairness index, for the reason given in 0005_runs_index_order.sql (max() reads it backwards).

DROP INDEX executions_team_claimed;
CREATE INDEX executions_team_claimed ON executions (team_id, claimed_at);
