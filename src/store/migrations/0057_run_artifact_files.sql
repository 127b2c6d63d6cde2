-- The bytes of FILE and SCREENSHOT artifacts an agent reported; the run's `artifacts` keeps their metadata.
CREATE TABLE run_artifact_files (
  artifact_uid text PRIMARY KEY,
  run_id text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  mime_type text NOT NULL,
  data bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT ay_now()
);
CREATE INDEX run_artifact_files_run ON run_artifact_files (run_id);
