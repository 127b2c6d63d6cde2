-- The messages of a run tree (GET /agent/runs/{id}/tree): the reports, questions and replies among the events of
-- its runs, read without walking every other event of those runs.
CREATE INDEX run_events_tree_messages ON run_events (run_id, sequence) WHERE type IN ('report', 'question', 'reply');
