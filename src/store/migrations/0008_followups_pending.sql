-- The follow-ups not yet handed to an execution, by age: the reaper looks for them every heartbeat
-- (requeueWaitingFollowups), and without this index read every follow-up ever sent (11 ms at 200,000 on
-- PostgreSQL, growing with the history; 0.07 ms with it). Only pending follow-ups are in it: a handful.
CREATE INDEX run_followups_pending ON run_followups (created_at) WHERE consumed_by_execution IS NULL;
