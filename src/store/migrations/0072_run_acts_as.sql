-- Whom a run acts as under credentialStrategy CREATOR: {"provider", "account"} of the verified sender of the
-- signed provider event that started it, written by the server when it creates the run from the event. NULL:
-- the run acts as the connection (EXECUTOR). Run metadata no longer decides it: metadata is the caller's.
ALTER TABLE runs ADD COLUMN acts_as jsonb;

-- Runs the server created from provider events before this column carry the strategy in their metadata;
-- a run created through the API or by a schedule never acts as anyone (a follow-up continues a finished run
-- with its creator's tokens, so finished runs are filled in too).
UPDATE runs SET acts_as = jsonb_build_object('provider', metadata->>'provider', 'account', metadata->>'sender')
 WHERE metadata->>'credential_strategy' = 'CREATOR' AND source IN ('GITHUB_ACTION', 'SLACK', 'LINEAR')
   AND delivery_id IS NOT NULL;
