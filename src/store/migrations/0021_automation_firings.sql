-- Which automation fired for which accepted delivery: at most one run per (delivery, automation), however
-- many triggers match, across restarts and across processes.

CREATE TABLE automation_firings (
  delivery_id text NOT NULL,
  automation_id text NOT NULL,
  -- The run it started; NULL when the run could not be created (the error says why).
  run_id text,
  error text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (delivery_id, automation_id)
);
CREATE INDEX automation_firings_automation ON automation_firings (automation_id, created_at DESC);
