import type { Db } from '../kernel/db.ts';
import { RETENTION_MIN_AGE_MS, RETENTION_MIN_DELIVERIES } from './limits.ts';

const CHUNK = 5_000;

/**
 * Deletes the deliveries that are beyond both retention floors of their webhook: older than 7 days AND not
 * among its latest 50. A delivery still waiting in the outbox is never purged. Answers how many went.
 *
 * Every step reads the log index `(webhook_uid, received_at, id)`, never the whole table: the webhooks with
 * deliveries are found by skipping from one to the next (`hooks`), the 50th newest delivery of each is read from
 * the end of its range (`floor`), and what goes is the start of its range up to that delivery and to the cutoff.
 * A pass costs the number of webhooks plus what it deletes, however long the log is; ranking every delivery
 * of every webhook with old ones (the first version) grew with the log and held PGlite's thread, in front of
 * every statement on PGlite (docs/decisions.md, "Retention reads ranges").
 */
export async function purgeDeliveries(db: Db, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - RETENTION_MIN_AGE_MS);
  let total = 0;
  for (;;) {
    const res = await db.query<{ n: number }>(
      `WITH RECURSIVE hooks AS (
         (SELECT webhook_uid FROM webhook_deliveries ORDER BY webhook_uid LIMIT 1)
         UNION ALL
         SELECT (SELECT d.webhook_uid FROM webhook_deliveries d WHERE d.webhook_uid > h.webhook_uid ORDER BY d.webhook_uid LIMIT 1)
           FROM hooks h WHERE h.webhook_uid IS NOT NULL
       ), floor AS (
         SELECT h.webhook_uid, f.received_at, f.id
           FROM hooks h
           CROSS JOIN LATERAL (
             SELECT d.received_at, d.id FROM webhook_deliveries d
              WHERE d.webhook_uid = h.webhook_uid
              ORDER BY d.received_at DESC, d.id DESC OFFSET $2::int - 1 LIMIT 1
           ) f
          WHERE h.webhook_uid IS NOT NULL
       ), doomed AS (
         SELECT o.id
           FROM floor
           CROSS JOIN LATERAL (
             SELECT d.id FROM webhook_deliveries d
              WHERE d.webhook_uid = floor.webhook_uid AND d.received_at < $1 AND (d.received_at, d.id) < (floor.received_at, floor.id)
                AND NOT d.outbox_pending
              ORDER BY d.received_at, d.id LIMIT $3
           ) o
          LIMIT $3
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
