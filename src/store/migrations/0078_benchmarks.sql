-- Benchmark runs (src/scoring/benchmarks.ts): each task of a suite runs as a run of the suite's agent, and a
-- judge scores its result against the task's success criteria. Kept, so two revisions compare side by side.
CREATE TABLE benchmark_runs (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  suite text NOT NULL,
  suite_name text NOT NULL,
  agent text NOT NULL,
  -- The factory's applied revision the runs were started from: what a comparison compares.
  revision text,
  judge_model text NOT NULL,
  state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  finished_at timestamptz
);
CREATE INDEX benchmark_runs_factory_suite ON benchmark_runs (factory_id, suite, created_at DESC);

CREATE TABLE benchmark_results (
  benchmark_run_id text NOT NULL REFERENCES benchmark_runs(id) ON DELETE CASCADE,
  task text NOT NULL,
  position integer NOT NULL,
  title text NOT NULL,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  -- pending (the run or its judgement is under way) → judged | unscored
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'judged', 'unscored')),
  claimed_until timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  run_state text,
  passed boolean,
  score double precision,
  label text,
  reason text,
  duration_ms bigint,
  usage jsonb NOT NULL DEFAULT '{}'::jsonb,
  judge_usage jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (benchmark_run_id, task)
);
CREATE INDEX benchmark_results_pending ON benchmark_results (run_id) WHERE state = 'pending';
