-- The files of a factory's latest revision refused for its definition's errors, so that an error can be shown at
-- its line in the file that has it (GET /factories/{id}/revisions/{revision}/files/{path}). One revision per
-- factory: the next refusal replaces it.
CREATE TABLE factory_refused_files (
  factory_id text NOT NULL REFERENCES factories (id) ON DELETE CASCADE,
  revision text NOT NULL,
  path text NOT NULL,
  content text NOT NULL,
  PRIMARY KEY (factory_id, path)
);
