-- Scorers judge sampled finished runs (src/scoring/). A scan of each factory with scorers finds the runs that
-- finished since its cursor and queues one job per sampled (run, scorer); the job runner asks the judge and
-- stores the score. Nothing here is written while a run ends: scoring adds no latency to it.
CREATE TABLE scoring_cursors (
  factory_id text PRIMARY KEY REFERENCES factories(id) ON DELETE CASCADE,
  -- Runs of the factory updated up to this time have been looked at.
  scanned_to timestamptz NOT NULL
);

CREATE TABLE scoring_jobs (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  scorer text NOT NULL,
  agent text NOT NULL,
  -- pending → done | failed. A claim moves run_after past its lease: a claim lost in a crash is taken again after it.
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  run_after timestamptz NOT NULL DEFAULT ay_now(),
  error text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  finished_at timestamptz
);
CREATE UNIQUE INDEX scoring_jobs_once ON scoring_jobs (run_id, scorer);
CREATE INDEX scoring_jobs_due ON scoring_jobs (run_after) WHERE state = 'pending';

-- One judgement of a run by a scorer: `scored` with its label, score and pass, or `unscored` with the reason.
CREATE TABLE run_scores (
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  scorer text NOT NULL,
  team_id text NOT NULL,
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  agent text NOT NULL,
  status text NOT NULL CHECK (status IN ('scored', 'unscored')),
  label text,
  score double precision,
  passed boolean,
  reason text NOT NULL,
  judge_model text NOT NULL,
  -- {input_tokens, output_tokens, requests}
  usage jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (run_id, scorer)
);
CREATE INDEX run_scores_factory_scorer ON run_scores (factory_id, scorer, created_at DESC);
CREATE INDEX run_scores_team_created ON run_scores (team_id, created_at DESC);

-- Runs of a factory's foreman started because a scorer's pass rate fell below its passing score.
CREATE TABLE scorer_improvement_runs (
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  scorer text NOT NULL,
  run_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (factory_id, scorer, run_id)
);
