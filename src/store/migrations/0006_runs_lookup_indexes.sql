-- Look-ups that read every run before: the public session page (/sessions/{session_id}), a run's conversation
-- (id or conversation_id), and the descendants of a run (parent_run_id). Session ids are UUIDv7 from now on, so
-- the session index grows at one end like the primary key; the other two are partial, and most runs (API
-- creations without a parent or conversation) never enter them.

CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_conversation ON runs (team_id, conversation_id) WHERE conversation_id IS NOT NULL;
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
