-- Self-hosted worker connections (one row per WebSocket connection; several workers may share an ID) and
-- the service's own executor processes, with what they offer, so that a waiting run can say what it waits for.

CREATE TABLE worker_connections (
  id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  worker_id text NOT NULL,
  capacity integer NOT NULL,
  load integer NOT NULL DEFAULT 0,
  harnesses text[] NOT NULL DEFAULT '{}',
  default_harness text,
  host text,
  version text,
  protocol integer NOT NULL,
  -- The server process the socket is connected to.
  server_id text NOT NULL,
  connected_at timestamptz NOT NULL DEFAULT ay_now(),
  last_seen_at timestamptz NOT NULL DEFAULT ay_now(),
  disconnected_at timestamptz
);
CREATE INDEX worker_connections_team ON worker_connections (team_id, worker_id, last_seen_at DESC);

CREATE TABLE executor_processes (
  id text PRIMARY KEY,
  host text NOT NULL,
  capacity integer NOT NULL,
  -- Harness types it runs; default_harness: what runs get whose harness is `oz` or none.
  harnesses text[] NOT NULL,
  default_harness text,
  last_seen_at timestamptz NOT NULL DEFAULT ay_now()
);
