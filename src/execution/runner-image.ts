/**
 * The container image of a run's runner (`platform.linux.dockerImage` of the runner its configuration or its
 * factory agent names), for executors with a container runtime: one query for a claim's runs.
 */
import type { Queryable } from '../kernel/db.ts';

/** Run id → image, for the runs whose runner has one. */
export async function runnerImages(q: Queryable, runIds: readonly string[]): Promise<Map<string, string>> {
  if (runIds.length === 0) return new Map();
  const res = await q.query<{ run_id: string; image: string }>(
    `SELECT r.id AS run_id, rn->'platform'->>'dockerImage' AS image
     FROM runs r
     JOIN factories f ON f.id = r.factory_id AND f.deleted_at IS NULL
     CROSS JOIN LATERAL jsonb_array_elements(coalesce(f.definition->'runners', '[]'::jsonb)) rn
     WHERE r.id = ANY($1::text[])
       AND rn->>'name' = coalesce(
         r.config->>'runner_id',
         (SELECT a->'execution'->>'runner' FROM jsonb_array_elements(coalesce(f.definition->'agents', '[]'::jsonb)) a
          WHERE a->>'name' = r.config->>'name' LIMIT 1))
       AND rn->'platform'->>'dockerImage' IS NOT NULL`,
    [runIds],
  );
  return new Map(res.rows.map((r) => [r.run_id, r.image]));
}
