-- The durable queue of outbound provider work (0067, 0070) carries Linear's work as well as GitHub's: it is the
-- integrations' job queue (src/integrations/integration-jobs.ts). The view under the old name keeps processes
-- of the previous release working during a rolling deploy (a simple view takes their inserts, updates and row
-- locks); a later release drops it.
ALTER TABLE github_jobs RENAME TO integration_jobs;
ALTER INDEX github_jobs_once RENAME TO integration_jobs_once;
ALTER INDEX github_jobs_due RENAME TO integration_jobs_due;
-- The primary key, checks and foreign keys were named after the table, and so were the NOT NULL constraints
-- from PostgreSQL 18 on (PGlite too); renaming the primary key renames its index as well.
DO $$
DECLARE
  old_name name;
BEGIN
  FOR old_name IN
    SELECT conname FROM pg_constraint
     WHERE conrelid = 'integration_jobs'::regclass AND conname LIKE 'github\_jobs\_%'
  LOOP
    EXECUTE format('ALTER TABLE integration_jobs RENAME CONSTRAINT %I TO %I', old_name,
                   'integration_jobs_' || substr(old_name, length('github_jobs_') + 1));
  END LOOP;
END $$;
CREATE VIEW github_jobs AS SELECT * FROM integration_jobs;
