import type { Queryable } from '../kernel/db.ts';

/** A managed secret's metadata; the value never leaves this module except through a SecretProvider. */
export interface SecretRow {
  team_id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
}

/** Inserts or replaces the value; answers whether the secret already existed. */
export async function upsertSecret(
  q: Queryable,
  teamId: string,
  name: string,
  ciphertext: Buffer,
): Promise<{ row: SecretRow; created: boolean }> {
  const res = await q.query<SecretRow & { created: boolean }>(
    `INSERT INTO secrets (team_id, name, ciphertext) VALUES ($1, $2, $3)
     ON CONFLICT (team_id, name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = ay_now()
     RETURNING team_id, name, created_at, updated_at, (xmax = 0) AS created`,
    [teamId, name, ciphertext],
  );
  const { created, ...row } = res.rows[0]!;
  return { row, created };
}

export async function listSecrets(q: Queryable, teamId: string): Promise<SecretRow[]> {
  const res = await q.query<SecretRow>(
    'SELECT team_id, name, created_at, updated_at FROM secrets WHERE team_id = $1 ORDER BY name',
    [teamId],
  );
  return res.rows;
}

export async function getSecretMeta(q: Queryable, teamId: string, name: string): Promise<SecretRow | undefined> {
  const res = await q.query<SecretRow>(
    'SELECT team_id, name, created_at, updated_at FROM secrets WHERE team_id = $1 AND name = $2',
    [teamId, name],
  );
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
  const res = await q.query<SecretRow>(
    'DELETE FROM secrets WHERE team_id = $1 AND name = $2 RETURNING team_id, name, created_at, updated_at',
    [teamId, name],
  );
  return res.rows[0];
}
