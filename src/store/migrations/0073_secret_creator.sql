-- Who wrote a managed secret's value: the subject (user or service account) of the API key that created or last
-- replaced it. NULL: written before this column, or by the server itself (a webhook's secret); such a secret is
-- the team admins'. A member may link as their own provider identity only a secret whose creator they are
-- (docs/security.md, "Members' provider identities").
ALTER TABLE secrets ADD COLUMN created_by text;

-- Whose secret a provider identity was linked with (the secret's creator then): a CREATOR run is lent the token
-- only while nobody else has written the secret since, so a value an admin writes over a member's secret never
-- becomes that member's.
ALTER TABLE integration_identities ADD COLUMN secret_owner text;

-- Links a member made to a team secret (every secret is the admins' until now) are what a member may no longer
-- make: they are removed, and those members link again with their own token. Links of principals that hold a
-- team admin key stay.
DELETE FROM integration_identities i
 WHERE NOT EXISTS (SELECT 1 FROM api_keys k
                    WHERE k.principal_id = i.subject_id AND k.team_id = i.team_id AND k.role = 'admin'
                      AND k.revoked_at IS NULL);
