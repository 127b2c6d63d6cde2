/** The health domain's SQL: the readiness ping and what a failed reconcile recorded. */
import type { Queryable } from '../kernel/db.ts';

export async function ping(q: Queryable): Promise<void> {
  await q.query('SELECT 1');
}

/** Why a factory's last reconcile failed: its refusal reason, or its source's error. */
export async function factoryFailure(
  q: Queryable,
  factoryId: string,
): Promise<{ reason: string | null; source_error: { reason?: string } | null } | undefined> {
  const res = await q.query<{ reason: string | null; source_error: { reason?: string } | null }>(
    'SELECT reason, source_error FROM factories WHERE id = $1',
    [factoryId],
  );
  return res.rows[0];
}
