-- Who wrote a managed secret's value: the subject (user or service account) of the API key that created or last
-- replaced it. NULL: written before this column, or by the server itself (a webhook's secret); such a secret is
-- the team admins'. A member may link as their own provider identity only a secret whose creator they are
-- (docs/security.md, "Members' provider identities").
ALTER TABLE secrets ADD COLUMN created_by text;
