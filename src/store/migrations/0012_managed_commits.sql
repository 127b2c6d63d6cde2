-- Every commit of a managed factory, in order. The database is the managed repository's record: each process
-- keeps a bare git copy under its data directory and rebuilds it from these rows (git fast-import of the same
-- tree, parent, identities, times and message gives the same commit ids), so processes that share the database
-- share the history, and a process that starts with an empty data directory loses nothing.
CREATE TABLE managed_commits (
  factory_id text NOT NULL REFERENCES factories(id) ON DELETE CASCADE,
  -- 1, 2, 3 … per factory: a write inserts head + 1, so two writes from the same head cannot both land.
  seq integer NOT NULL,
  sha text NOT NULL,
  parent_sha text,
  author_name text NOT NULL,
  author_email text NOT NULL,
  -- Seconds since the epoch, as written into the commit (UTC).
  authored_at bigint NOT NULL,
  committed_at bigint NOT NULL,
  -- The message exactly as committed (it ends with a newline).
  message text NOT NULL,
  -- The whole tree: [{path, content}], sorted by path.
  files jsonb NOT NULL,
  PRIMARY KEY (factory_id, seq)
);
