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

/** Totals of a factory's runs by automation ('' for none, else its name) and state (migration 0090). */
export interface FactoryRunTotals {
  factory_id: string;
  automation: string;
  state: string;
  runs: string;
  input_tokens: string;
  output_tokens: string;
  cost_usd: string;
}

/**
 * Folds the runs' tallies into the totals and answers the totals of live factories. One statement per step: the
 * fold deletes the tallies it takes (SKIP LOCKED: two processes scraping take different ones) and adds them to
 * the totals in key order (so two folds never wait on each other in opposite orders).
 */
export async function factoryRunTotals(q: Queryable): Promise<FactoryRunTotals[]> {
  await q.query(
    `WITH moved AS (
       DELETE FROM factory_run_tallies WHERE id IN (SELECT id FROM factory_run_tallies ORDER BY id LIMIT 50000 FOR UPDATE SKIP LOCKED)
       RETURNING factory_id, automation_id, state, ended, input_tokens, output_tokens, cost_usd)
     INSERT INTO factory_run_totals AS t (factory_id, automation_id, state, runs, input_tokens, output_tokens, cost_usd)
     SELECT factory_id, automation_id, state, sum(ended), sum(input_tokens), sum(output_tokens), sum(cost_usd)
       FROM moved GROUP BY factory_id, automation_id, state ORDER BY factory_id, automation_id, state
     ON CONFLICT (factory_id, automation_id, state) DO UPDATE
        SET runs = t.runs + EXCLUDED.runs, input_tokens = t.input_tokens + EXCLUDED.input_tokens,
            output_tokens = t.output_tokens + EXCLUDED.output_tokens, cost_usd = t.cost_usd + EXCLUDED.cost_usd`,
  );
  const res = await q.query<FactoryRunTotals>(
    `SELECT t.factory_id, coalesce(a.name, '') AS automation, t.state, t.runs, t.input_tokens, t.output_tokens, t.cost_usd
       FROM factory_run_totals t JOIN factories f ON f.id = t.factory_id AND f.deleted_at IS NULL
       LEFT JOIN automations a ON a.id = nullif(t.automation_id, '')`,
  );
  return res.rows;
}
