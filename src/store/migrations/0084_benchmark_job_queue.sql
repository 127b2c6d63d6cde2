-- Benchmark judgements join the kernel's durable job queue (src/kernel/job-queue.ts, docs/architecture.md "One
-- durable job queue"), as integration and scorer jobs do: a queue table has id, state ('pending' while due),
-- attempts, run_after and error. A result is due once its run has ended (the queue's `due` condition);
-- run_after takes the place of claimed_until (a claim moves it past its lease).
ALTER TABLE benchmark_results ADD COLUMN id text GENERATED ALWAYS AS (benchmark_run_id || '/' || task) STORED;
CREATE UNIQUE INDEX benchmark_results_id ON benchmark_results (id);
ALTER TABLE benchmark_results RENAME COLUMN claimed_until TO run_after;
UPDATE benchmark_results SET run_after = ay_now() WHERE run_after IS NULL;
ALTER TABLE benchmark_results ALTER COLUMN run_after SET DEFAULT ay_now();
ALTER TABLE benchmark_results ALTER COLUMN run_after SET NOT NULL;
ALTER TABLE benchmark_results ADD COLUMN error text;
CREATE INDEX benchmark_results_due ON benchmark_results (run_after) WHERE state = 'pending';
