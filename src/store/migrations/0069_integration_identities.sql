-- Members' own provider identities, for runs whose credentialStrategy is CREATOR: a member links a token of
-- their own (by managed-secret name, never a value) and the account it belongs to, as the provider answered
-- when the token was checked (GitHub login, Slack user id, Linear user id).

CREATE TABLE integration_identities (
  team_id text NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  -- The member: the subject of the API key that linked it (a user or a service account).
  subject_id text NOT NULL,
  subject_name text NOT NULL,
  provider text NOT NULL CHECK (provider IN ('github', 'slack', 'linear')),
  secret_name text NOT NULL,
  -- The provider's account: matched case-insensitively against an event's sender.
  external_id text NOT NULL,
  external_name text,
  created_at timestamptz NOT NULL DEFAULT ay_now(),
  updated_at timestamptz NOT NULL DEFAULT ay_now(),
  PRIMARY KEY (team_id, subject_id, provider)
);
-- One member per provider account in a team: an event's sender maps to at most one member.
CREATE UNIQUE INDEX integration_identities_account ON integration_identities (team_id, provider, lower(external_id));
