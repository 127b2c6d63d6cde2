import type { Queryable } from '../kernel/db.ts';
import type { Principal, SubjectType, TeamRole } from './principal.ts';

export interface TeamRow {
  id: string;
  name: string;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  team_id: string;
  principal_id: string;
  name: string;
  prefix: string;
  role: TeamRole;
  instance_admin: boolean;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  principal_kind: SubjectType;
  principal_name: string;
  principal_email: string | null;
}

export async function insertTeam(q: Queryable, id: string, name: string): Promise<TeamRow> {
  const res = await q.query<TeamRow>('INSERT INTO teams (id, name) VALUES ($1, $2) RETURNING *', [id, name]);
  return res.rows[0]!;
}

export async function findTeamByName(q: Queryable, name: string): Promise<TeamRow | undefined> {
  const res = await q.query<TeamRow>('SELECT * FROM teams WHERE name = $1', [name]);
  return res.rows[0];
}

export async function listTeams(q: Queryable): Promise<TeamRow[]> {
  return (await q.query<TeamRow>('SELECT * FROM teams ORDER BY created_at, id')).rows;
}

export async function getTeam(q: Queryable, id: string): Promise<TeamRow | undefined> {
  return (await q.query<TeamRow>('SELECT * FROM teams WHERE id = $1', [id])).rows[0];
}

export async function insertPrincipal(
  q: Queryable,
  p: { id: string; teamId: string; kind: SubjectType; displayName: string; email: string | null },
): Promise<void> {
  await q.query('INSERT INTO principals (id, team_id, kind, display_name, email) VALUES ($1, $2, $3, $4, $5)', [
    p.id,
    p.teamId,
    p.kind,
    p.displayName,
    p.email,
  ]);
}

export async function principalInTeam(q: Queryable, teamId: string, principalId: string): Promise<boolean> {
  const res = await q.query('SELECT 1 FROM principals WHERE id = $1 AND team_id = $2', [principalId, teamId]);
  return res.rowCount > 0;
}

export async function insertApiKey(
  q: Queryable,
  k: {
    id: string;
    teamId: string;
    principalId: string;
    name: string;
    prefix: string;
    keyHash: string;
    role: TeamRole;
    instanceAdmin: boolean;
    expiresAt: Date | null;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO api_keys (id, team_id, principal_id, name, prefix, key_hash, role, instance_admin, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [k.id, k.teamId, k.principalId, k.name, k.prefix, k.keyHash, k.role, k.instanceAdmin, k.expiresAt],
  );
}

const KEY_COLUMNS = `k.id, k.team_id, k.principal_id, k.name, k.prefix, k.role, k.instance_admin, k.created_at,
  k.expires_at, k.last_used_at, k.revoked_at, p.kind AS principal_kind, p.display_name AS principal_name,
  p.email AS principal_email`;

export async function listApiKeys(q: Queryable, teamId: string): Promise<ApiKeyRow[]> {
  const res = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys k JOIN principals p ON p.id = k.principal_id
     WHERE k.team_id = $1 ORDER BY k.created_at DESC, k.id DESC`,
    [teamId],
  );
  return res.rows;
}

export async function getApiKey(q: Queryable, teamId: string, id: string): Promise<ApiKeyRow | undefined> {
  const res = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys k JOIN principals p ON p.id = k.principal_id WHERE k.team_id = $1 AND k.id = $2`,
    [teamId, id],
  );
  return res.rows[0];
}

export async function revokeApiKey(q: Queryable, teamId: string, id: string): Promise<ApiKeyRow | undefined> {
  await q.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, ay_now()) WHERE team_id = $1 AND id = $2', [
    teamId,
    id,
  ]);
  return getApiKey(q, teamId, id);
}

export async function principalForKeyHash(q: Queryable, keyHash: string): Promise<Principal | undefined> {
  const res = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys k JOIN principals p ON p.id = k.principal_id
     WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`,
    [keyHash],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  return {
    teamId: row.team_id,
    keyId: row.id,
    role: row.role,
    instanceAdmin: row.instance_admin,
    subject: {
      id: row.principal_id,
      type: row.principal_kind,
      displayName: row.principal_name,
      email: row.principal_email,
    },
  };
}

export async function touchApiKey(q: Queryable, id: string): Promise<void> {
  await q.query(
    `UPDATE api_keys SET last_used_at = ay_now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [id],
  );
}

export async function keyHashExists(q: Queryable, keyHash: string): Promise<boolean> {
  return (await q.query('SELECT 1 FROM api_keys WHERE key_hash = $1', [keyHash])).rowCount > 0;
}

export async function countTeams(q: Queryable): Promise<number> {
  const res = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM teams');
  return res.rows[0]?.n ?? 0;
}

export interface AgentIdentityRow {
  id: string;
  team_id: string;
  principal_id: string;
  name: string;
  settings: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export async function insertAgentIdentity(
  q: Queryable,
  a: { id: string; teamId: string; principalId: string; name: string; settings: Record<string, unknown> },
): Promise<AgentIdentityRow> {
  const res = await q.query<AgentIdentityRow>(
    `INSERT INTO agent_identities (id, team_id, principal_id, name, settings) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
    [a.id, a.teamId, a.principalId, a.name, JSON.stringify(a.settings)],
  );
  return res.rows[0]!;
}

export async function listAgentIdentities(
  q: Queryable,
  teamId: string,
  factoryUid?: string,
): Promise<AgentIdentityRow[]> {
  if (factoryUid !== undefined) {
    return (
      await q.query<AgentIdentityRow>(
        `SELECT * FROM agent_identities WHERE team_id = $1 AND settings->>'factory_uid' = $2 ORDER BY created_at, id`,
        [teamId, factoryUid],
      )
    ).rows;
  }
  return (
    await q.query<AgentIdentityRow>('SELECT * FROM agent_identities WHERE team_id = $1 ORDER BY created_at, id', [
      teamId,
    ])
  ).rows;
}

export async function getAgentIdentity(
  q: Queryable,
  teamId: string,
  id: string,
): Promise<AgentIdentityRow | undefined> {
  return (
    await q.query<AgentIdentityRow>('SELECT * FROM agent_identities WHERE team_id = $1 AND id = $2', [teamId, id])
  ).rows[0];
}

export async function updateAgentIdentity(
  q: Queryable,
  teamId: string,
  id: string,
  patch: { name: string | undefined; settings: Record<string, unknown> },
): Promise<AgentIdentityRow | undefined> {
  const res = await q.query<AgentIdentityRow>(
    `UPDATE agent_identities SET name = coalesce($3, name), settings = $4, updated_at = ay_now()
     WHERE team_id = $1 AND id = $2 RETURNING *`,
    [teamId, id, patch.name ?? null, JSON.stringify(patch.settings)],
  );
  if (res.rows[0] && patch.name !== undefined) {
    await q.query('UPDATE principals SET display_name = $2 WHERE id = $1', [res.rows[0].principal_id, patch.name]);
  }
  return res.rows[0];
}

/** Deletes the identity with its service account (and so its API keys); answers whether it existed. */
export async function deleteAgentIdentity(q: Queryable, teamId: string, id: string): Promise<boolean> {
  const res = await q.query<{ principal_id: string }>(
    'DELETE FROM agent_identities WHERE team_id = $1 AND id = $2 RETURNING principal_id',
    [teamId, id],
  );
  const row = res.rows[0];
  if (!row) return false;
  await q.query('DELETE FROM principals WHERE id = $1 AND team_id = $2', [row.principal_id, teamId]);
  return true;
}

/** Serialises first starts (the bootstrap of the default team and admin key), for the transaction. */
export async function lockBootstrap(q: Queryable, key: number): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock($1)', [key]);
}
