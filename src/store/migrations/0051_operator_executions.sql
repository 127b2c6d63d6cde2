-- A run's Job is one execution of it (a follow-up to a finished run executes it again, as another Job):
-- Jobs are keyed by their name, each names its execution, and a run has at most one open Job.

ALTER TABLE kubernetes_run_jobs DROP CONSTRAINT kubernetes_run_jobs_pkey;
ALTER TABLE kubernetes_run_jobs ADD COLUMN execution_id text;
-- The follow-ups the execution's prompt delivers, consumed when its pod starts.
ALTER TABLE kubernetes_run_jobs ADD COLUMN followup_ids jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE kubernetes_run_jobs ADD PRIMARY KEY (namespace, job_name);
CREATE UNIQUE INDEX kubernetes_run_jobs_open_run ON kubernetes_run_jobs (run_id) WHERE finished_at IS NULL;
