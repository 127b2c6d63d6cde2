import type { Queryable } from '../kernel/db.ts';

/** A managed secret's metadata; the value never leaves this module except through a SecretProvider. */
export interface SecretRow {
  team_id: string;
  name: string;
  /** The subject whose key wrote the value; null: the team admins' (written before migration 0073, or by the server). */
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

const META = 'team_id, name, created_by, created_at, updated_at';

/**
 * Inserts or replaces the value; answers whether the secret already existed. With `onlyOwnedBy`, an existing
 * secret is replaced only when that subject owns it: undefined otherwise (nothing written).
 */
export async function upsertSecret(
  q: Queryable,
  teamId: string,
  name: string,
  ciphertext: Buffer,
  createdBy: string | null,
  onlyOwnedBy?: string,
): Promise<{ row: SecretRow; created: boolean } | undefined> {
  // whoever writes the value owns it from now on
  const res = await q.query<SecretRow & { created: boolean }>(
    `INSERT INTO secrets (team_id, name, ciphertext, created_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (team_id, name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, created_by = EXCLUDED.created_by,
       updated_at = ay_now()
       ${onlyOwnedBy === undefined ? '' : 'WHERE secrets.created_by = $5'}
     RETURNING ${META}, (xmax = 0) AS created`,
    onlyOwnedBy === undefined
      ? [teamId, name, ciphertext, createdBy]
      : [teamId, name, ciphertext, createdBy, onlyOwnedBy],
  );
  const first = res.rows[0];
  if (!first) return undefined;
  const { created, ...row } = first;
  return { row, created };
}

export async function listSecrets(q: Queryable, teamId: string): Promise<SecretRow[]> {
  const res = await q.query<SecretRow>(`SELECT ${META} FROM secrets WHERE team_id = $1 ORDER BY name`, [teamId]);
  return res.rows;
}

export async function getSecretMeta(q: Queryable, teamId: string, name: string): Promise<SecretRow | undefined> {
  const res = await q.query<SecretRow>(`SELECT ${META} FROM secrets WHERE team_id = $1 AND name = $2`, [teamId, name]);
  return res.rows[0];
}

export async function getSecretCiphertext(q: Queryable, teamId: string, name: string): Promise<Uint8Array | undefined> {
  const res = await q.query<{ ciphertext: Uint8Array }>(
    'SELECT ciphertext FROM secrets WHERE team_id = $1 AND name = $2',
    [teamId, name],
  );
  return res.rows[0]?.ciphertext;
}

export async function deleteSecret(q: Queryable, teamId: string, name: string): Promise<SecretRow | undefined> {
  const res = await q.query<SecretRow>(`DELETE FROM secrets WHERE team_id = $1 AND name = $2 RETURNING ${META}`, [
    teamId,
    name,
  ]);
  return res.rows[0];
}
