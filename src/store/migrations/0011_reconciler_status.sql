-- Reconciler status and history details: why the last revision ended as it did, the last source failure,
-- a generation counter of the live state (plans are computed outside the apply lock and checked against it),
-- and per-apply warnings and commit metadata.

ALTER TABLE factories ADD COLUMN generation bigint NOT NULL DEFAULT 0;
-- PascalCase reason of the last revision outcome (Applied, ValidationFailed, ApplyFailed, DeletionBlocked) and a
-- "context: cause" message naming the revision.
ALTER TABLE factories ADD COLUMN reason text;
ALTER TABLE factories ADD COLUMN message text;
-- The last failed fetch of the source ({reason, kind: transient|terminal, message, at}); NULL after a good fetch.
ALTER TABLE factories ADD COLUMN source_error jsonb;
ALTER TABLE factories ADD COLUMN fetched_at timestamptz;

ALTER TABLE factory_applies ADD COLUMN commit_sha text;
ALTER TABLE factory_applies ADD COLUMN committed_at timestamptz;
-- What started it: poll, sync, push, watch, start, managed.
ALTER TABLE factory_applies ADD COLUMN trigger text;
ALTER TABLE factory_applies ADD COLUMN reason text;
ALTER TABLE factory_applies ADD COLUMN message text;
-- Plan warnings: renames, triggers that stop firing ([{code, file, line, path, message}]).
ALTER TABLE factory_applies ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]'::jsonb;
