import type { Db } from '../store/db.ts';
import { RETENTION_MIN_AGE_MS, RETENTION_MIN_DELIVERIES } from './limits.ts';

const CHUNK = 5_000;

/**
 * Deletes the deliveries that are beyond both retention floors of their webhook: older than 7 days AND not
 * among its latest 50. A delivery still waiting in the outbox is never purged. Answers how many went.
 */
export async function purgeDeliveries(db: Db, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - RETENTION_MIN_AGE_MS);
  let total = 0;
  for (;;) {
    const res = await db.query<{ n: number }>(
      `WITH ranked AS (
         SELECT id, received_at, outbox_pending,
                row_number() OVER (PARTITION BY webhook_uid ORDER BY received_at DESC, id DESC) AS rn
           FROM webhook_deliveries
          WHERE webhook_uid IN (SELECT DISTINCT webhook_uid FROM webhook_deliveries WHERE received_at < $1)
       ), doomed AS (
         SELECT id FROM ranked WHERE rn > $2 AND received_at < $1 AND NOT outbox_pending LIMIT $3
       ), gone AS (
         DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id RETURNING d.id
       ), unlinked AS (
         DELETE FROM automation_firings f USING gone WHERE f.delivery_id = gone.id
       )
       SELECT count(*)::int AS n FROM gone`,
      [cutoff, RETENTION_MIN_DELIVERIES, CHUNK],
    );
    const n = res.rows[0]?.n ?? 0;
    total += n;
    if (n < CHUNK) return total;
  }
}
