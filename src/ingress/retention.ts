import type { Db } from '../kernel/db.ts';
import { RETENTION_MIN_AGE_MS, RETENTION_MIN_DELIVERIES } from './limits.ts';
import { purgeDeliveryChunk } from './sql.ts';

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
    const n = await purgeDeliveryChunk(db, cutoff, RETENTION_MIN_DELIVERIES, CHUNK);
    total += n;
    if (n < CHUNK) return total;
  }
}
