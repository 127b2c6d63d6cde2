/** The metrics domain's SQL: what the gauges read when scraped. */
import type { Queryable } from '../kernel/db.ts';

/** Deliveries waiting in the outbox (counted through its partial index). */
export async function outboxCount(q: Queryable): Promise<{ n: string }> {
  return (await q.query<{ n: string }>('SELECT count(*) AS n FROM webhook_deliveries WHERE outbox_pending')).rows[0]!;
}

/** Scoring jobs waiting (counted through their partial index, migration 0077). */
export async function scoringPendingCount(q: Queryable): Promise<{ n: string }> {
  return (await q.query<{ n: string }>(`SELECT count(*) AS n FROM scoring_jobs WHERE state = 'pending'`)).rows[0]!;
}
