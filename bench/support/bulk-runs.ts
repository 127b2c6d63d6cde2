import type { Db } from '../../src/kernel/db.ts';

export const BULK_STATES = ['QUEUED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export const BULK_AGENTS = 10;

/**
 * Inserts runs `from`..`to` (inclusive) into a team with generate_series, in statements of 50,000: a quarter
 * in each of four states, ten agent names (`config.name`), three models, one second apart from 2025-01-01.
 */
export async function bulkInsertRuns(
  db: Db,
  teamId: string,
  creatorId: string,
  from: number,
  to: number,
): Promise<void> {
  const step = 50_000;
  for (let start = from; start <= to; start += step) {
    const end = Math.min(to, start + step - 1);
    await db.query(
      `INSERT INTO runs (id, team_id, title, prompt, state, source, config, config_name, model_id, session_id,
         creator_id, creator_type, creator_name, executor_id, executor_type, executor_name, created_at, updated_at)
       SELECT 'run_bulk' || lpad(g::text, 18, '0'), $1, 'Bulk run ' || g, 'Do task number ' || g || ' carefully',
         (ARRAY['QUEUED','SUCCEEDED','FAILED','CANCELLED'])[1 + g % 4], 'API',
         jsonb_build_object('name', 'agent-' || (g % ${BULK_AGENTS}), 'model_id', 'model-' || (g % 3)),
         'agent-' || (g % ${BULK_AGENTS}), 'model-' || (g % 3), md5(g::text)::uuid::text,
         $2, 'user', 'admin', NULL, NULL, NULL,
         timestamptz '2025-01-01 00:00:00+00' + g * interval '1 second',
         timestamptz '2025-01-01 00:00:00+00' + g * interval '1 second'
       FROM generate_series($3::int, $4::int) g`,
      [teamId, creatorId, start, end],
    );
  }
  await db.exec('ANALYZE runs');
}
