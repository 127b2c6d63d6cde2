-- The Kubernetes operator: the team that holds each namespace's factories, the Factory resource behind a
-- factory row, and the Job that executes a run.

-- One team per namespace: a factory's managed secrets are the Kubernetes Secrets of its namespace.
CREATE TABLE kubernetes_namespaces (
  namespace text PRIMARY KEY,
  team_id text NOT NULL UNIQUE REFERENCES teams(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT ay_now()
);

CREATE TABLE kubernetes_factories (
  factory_id text PRIMARY KEY REFERENCES factories(id) ON DELETE CASCADE,
  namespace text NOT NULL,
  name text NOT NULL,
  -- metadata.uid of the Factory: a Factory deleted and created again under the same name is a new factory.
  uid text NOT NULL UNIQUE,
  executor text NOT NULL DEFAULT 'kubernetes' CHECK (executor IN ('kubernetes', 'service')),
  suspended boolean NOT NULL DEFAULT false,
  -- spec.ingress.baseUrl: rendered into the webhook URLs of the Factory's status.
  ingress_base_url text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX kubernetes_factories_object ON kubernetes_factories (namespace, name) WHERE deleted_at IS NULL;

-- The Job of a run executed by the `kubernetes` executor.
CREATE TABLE kubernetes_run_jobs (
  run_id text PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  factory_id text NOT NULL,
  namespace text NOT NULL,
  job_name text NOT NULL,
  job_uid text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  -- Set once the Job's outcome moved the run to a final state (or the run ended elsewhere and the Job was deleted).
  finished_at timestamptz
);
CREATE INDEX kubernetes_run_jobs_active ON kubernetes_run_jobs (namespace, job_name) WHERE finished_at IS NULL;
