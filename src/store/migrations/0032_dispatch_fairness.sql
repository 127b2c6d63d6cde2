-- Round-robin between teams at dispatch: when teams have as many runs active, the one served least
-- recently goes first (its newest claim, looked up per queued team).
CREATE INDEX executions_team_claimed ON executions (team_id, claimed_at DESC);
